"""Tap mode: a recording reverse proxy that shows another app's LLM streams as turns.

:mod:`~streamscope.core.tap.proxy` is the ASGI app (forwarding, recording),
:mod:`~streamscope.core.tap.server` runs it under uvicorn (a thread, or the foreground for
``streamscope tap``). The tap comes after every stage: it uses the network client, the
pipeline and the capture recorder.
"""
