"""StreamScope's core: everything but the window, Qt-free (asyncio + httpx).

Grouped by the stage of a turn; imports point one way (``tests/test_layers.py`` checks it):

    wire  <-  turn  <-  verdict  <-  net  <-  capture  <-  store  <-  faults  <-  tap  <-  bench
          <-  serve

- :mod:`~streamscope.core.wire`: bytes -> events (SSE / NDJSON decoders, the dialects).
- :mod:`~streamscope.core.turn`: events -> a Turn (the reducer, outcome rules, pipeline, batches).
- :mod:`~streamscope.core.verdict`: a stream checked against its dialect's rules (lint).
- :mod:`~streamscope.core.net`: talking to endpoints (client, stream worker, endpoints, keys).
- :mod:`~streamscope.core.capture`: a turn's bytes kept (.sscap, replay, bundles, compare).
- :mod:`~streamscope.core.store`: SQLite (conversations, turns, the save clock, export).
- :mod:`~streamscope.core.faults`: faults on cue (a response transformed as a fault spec says,
  and how the client reacted); uses only ``wire``.
- :mod:`~streamscope.core.tap`: a recording reverse proxy for other apps' streams.
- :mod:`~streamscope.core.bench`: bench mode's definitions and statistics (from captures).
- :mod:`~streamscope.core.serve`: recorded exchanges answered again, byte-exact and timed.

``paths`` (where the profile lives) and ``redact`` (the one scrubber) are used by every stage
and import nothing of the core. Nothing here imports Qt, the UI or the demo endpoint.
"""
