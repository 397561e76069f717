"""Serve recorded LLM streams to a client under test — the public face of
:mod:`streamscope.core.serve`::

    from streamscope.serve import serve_captures

    with serve_captures(["tests/captures"], speed=None) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="unused")
        ...

See ``streamscope serve --help`` and the README's "Replay streams in your tests".
"""

from streamscope.core.serve import (
    VOLATILE_FIELDS,
    Playback,
    ServedExchange,
    ServeInputError,
    ServeServer,
    serve_captures,
)

__all__ = [
    "VOLATILE_FIELDS",
    "Playback",
    "ServeInputError",
    "ServeServer",
    "ServedExchange",
    "serve_captures",
]
