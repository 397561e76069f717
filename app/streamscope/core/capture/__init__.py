"""A turn's bytes, kept: the ``.sscap`` format, the recorder, replay, stored captures, repro
bundles, HAR files in and out, frames export and comparing two turns.

May import :mod:`~streamscope.core.wire`, :mod:`~streamscope.core.turn` and
:mod:`~streamscope.core.net` (a bundle carries the request as curl).
"""
