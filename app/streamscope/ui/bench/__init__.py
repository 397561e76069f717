"""The Bench window (Stream → Bench this endpoint…): the load's settings, live progress,
pyqtgraph plots of every figure, the per-request table — and a click on any request opens its
capture in the inspector at the frame that defined the value.

Imports ``core.bench`` and ``ui.base``; the shell hands it what it opens (the inspector,
the chat controller) through :class:`~.bench_opener.BenchOpener`. pyqtgraph and numpy are
imported only here, and only when the bench is first opened.
"""
