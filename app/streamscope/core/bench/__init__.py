"""Bench mode: load an endpoint and measure it, every request kept as a capture.

What each figure means, computed from captures:

- :mod:`.definitions`: every formula as a short text (the window's tooltips, the export).
- :mod:`.metrics`: one request's figures (:class:`~.metrics.RequestMetrics`), computed by
  replaying its capture through the turn pipeline (:func:`~.metrics.measure`), so a plotted
  value and the capture it opens are the same data.
- :mod:`.stats`: percentiles, outcome counts, throughput over a trimmed window and effective
  concurrency over many requests (:func:`~.stats.summarize`).
- :mod:`.export`: the report dict (AIPerf ``profile_export`` names where the definitions
  match) and the per-request CSV rows.
- :mod:`.tokenizer`: a user's own tokenizer (``str -> int``, never downloaded) to count
  output tokens with instead of the server's usage.

The load:

- :mod:`.schedule` (open-loop arrival times), :mod:`.transport` (the thin HTTP/1.1 client that
  stamps each read), :mod:`.load` (closed and open loops), :mod:`.runner_process` (the load in
  its own process), :mod:`.captures` (each request recorded, and replayed once into its
  :class:`~.metrics.RequestMetrics`), :mod:`.report` (the run's report: per step the
  :mod:`.stats` summary in :mod:`.export`'s shape, the rows, the runner's own health) and
  :mod:`.session` (a run end to end, for ``streamscope bench`` and the window).

Bench comes after every stage: it may import the wire, the pipeline, captures and the network
client's helpers; nothing of the UI.
"""
