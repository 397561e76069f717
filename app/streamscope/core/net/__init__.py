"""Talking to endpoints: the streaming client, the stream worker process, endpoint settings,
the models API, secrets (keyring), curl import/export, raw requests, and the messages between
this program's processes.

May import :mod:`~streamscope.core.wire` and :mod:`~streamscope.core.turn`.
"""
