"""Bytes -> events: the SSE and NDJSON decoders, the provider-neutral events, the request
model (:mod:`.conversation`), and the dialects with their registry (the only list of them).

Imports nothing of the core outside ``wire`` (and ``redact``).
"""
