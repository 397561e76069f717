"""A turn's bytes, kept: the ``.sscap`` format, the recorder, replay, stored captures, repro
bundles, HAR files in and out, frames export, comparing two turns and checking a capture
against its dialect's rules (:mod:`~streamscope.core.capture.lint`).

May import :mod:`~streamscope.core.wire`, :mod:`~streamscope.core.turn`,
:mod:`~streamscope.core.verdict` (the linter) and :mod:`~streamscope.core.net` (a bundle
carries the request as curl).
"""
