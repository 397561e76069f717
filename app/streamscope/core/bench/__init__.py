"""Bench mode's definitions: what each figure of a load test means, computed from captures.

- :mod:`.definitions`: every formula as a short text (the window's tooltips, the export).
- :mod:`.metrics`: one request's figures (:class:`~.metrics.RequestMetrics`), computed by
  replaying its capture through the turn pipeline (:func:`~.metrics.measure`), so a plotted
  value and the capture it opens are the same data.
- :mod:`.stats`: percentiles, outcome counts, throughput over a trimmed window and effective
  concurrency over many requests (:func:`~.stats.summarize`).
- :mod:`.export`: the report dict (AIPerf ``profile_export`` names where the definitions
  match) and the per-request CSV rows.

The load itself (workers, schedules, the bench process) lives elsewhere; this package only
defines and computes. May import :mod:`~streamscope.core.wire`, :mod:`~streamscope.core.turn`
and :mod:`~streamscope.core.capture`; nothing of the UI.
"""
