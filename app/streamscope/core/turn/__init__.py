"""Events -> a Turn: the reducer (the only assembler of a turn), the outcome rules, the
byte pipeline, the observer interface and the compact progress batches.

May import :mod:`streamscope.core.wire`; nothing else of the core.
"""
