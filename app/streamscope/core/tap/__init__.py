"""Tap mode: a recording reverse proxy that shows another app's LLM streams as turns.

:mod:`~streamscope.core.tap.forward` is the forwarding half (an ASGI app for uvicorn that
tells what passes as messages; the child process ``streamscope --tap-forwarder`` runs it),
:mod:`~streamscope.core.tap.proxy` the recording half (each exchange read as a turn and
saved as a capture), :mod:`~streamscope.core.tap.server` starts the one and feeds the other
(from a thread, or the foreground for ``streamscope tap``). The tap comes after every stage:
it uses the network client, the pipeline and the capture recorder.
"""
