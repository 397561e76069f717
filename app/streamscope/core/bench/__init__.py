"""Bench mode: load an endpoint and measure it, every request kept as a capture.

:mod:`.schedule` (open-loop arrival times), :mod:`.transport` (the thin HTTP/1.1 client that
stamps each read), :mod:`.load` (closed and open loops), :mod:`.runner_process` (the load in
its own process), :mod:`.captures` (each request recorded and replayed as a capture),
:mod:`.report` (rows and summaries; the seam where the metric definitions plug in) and
:mod:`.session` (a run end to end, for ``streamscope bench`` and the window). Bench comes after
every stage: it uses the wire, the pipeline, captures and the network client's helpers.
"""
