"""The SSE decoder's public import path (``from streamscope.core.sse import SSEDecoder``):
tools outside the package rely on it. The decoder lives in :mod:`streamscope.core.wire.sse`."""

from streamscope.core.wire.sse import RawFrame, SSEDecoder, SSEEvent, SSEProtocolError

__all__ = ["RawFrame", "SSEDecoder", "SSEEvent", "SSEProtocolError"]
