"""What every dialect writer provides, and the SSE framing they share."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from streamscope.demo.scenarios import ErrorKind, FinishKind
from streamscope.demo.script import Ask, Reply, Step, Usage

JSON = dict[str, Any]


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def arguments_object(arguments: str) -> JSON:
    """Tool-call arguments as an object, for dialects that send objects (Gemini, Ollama)."""
    value = orjson.loads(arguments)
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class Framing:
    """How SSE lines are spelled: the line ending and whether `data:` has its space."""

    line_ending: str = "\n"
    space: bool = True

    def event(self, data: bytes, event: str | None = None) -> bytes:
        eol = self.line_ending.encode()
        sep = b": " if self.space else b":"
        head = b"event" + sep + event.encode() + eol if event else b""
        return head + b"data" + sep + data + eol + eol

    def comment(self, text: str) -> bytes:
        eol = self.line_ending.encode()
        return b": " + text.encode() + eol + eol


class Writer(ABC):
    """Spells one answer in one dialect. Stateful: one instance per response.

    Streaming calls come in this order: `open`, `step`..., then `finish` and `terminal` (or
    `error`). Each returns whole frames as bytes; the playback loop decides what is sent.
    """

    media_type = "text/event-stream"
    finish_reasons: ClassVar[Mapping[FinishKind, str]]
    """How this wire spells each way an answer ends (set by each dialect's writer)."""
    interleaves_tool_calls = False
    """Whether parallel tool calls' argument fragments interleave on this wire."""

    def __init__(self, ask: Ask, framing: Framing) -> None:
        self.ask = ask
        self.framing = framing
        self.created = int(time.time())

    @abstractmethod
    def open(self) -> list[bytes]: ...

    @abstractmethod
    def step(self, step: Step) -> list[bytes]: ...

    @abstractmethod
    def finish(self, kind: FinishKind, usage: Usage) -> list[bytes]:
        """Frames that carry the finish reason (and usage), before the terminal signal."""

    @abstractmethod
    def terminal(self) -> list[bytes]:
        """The frames that tell a client "the server is done" (may be empty: Gemini)."""

    @abstractmethod
    def error(self, kind: ErrorKind, message: str) -> list[bytes]:
        """The dialect's in-stream error event."""

    def keepalive(self) -> bytes | None:
        return self.framing.comment("keep-alive")

    def bad_json(self) -> bytes:
        return self.framing.event(b'{"oops": this is not JSON')

    @abstractmethod
    def body(self, reply: Reply) -> JSON:
        """The non-streaming response body."""

    @staticmethod
    @abstractmethod
    def error_body(status: int, kind: str, message: str) -> JSON:
        """The dialect's HTTP error body (kind: ErrorKind, "invalid_request" or "not_found")."""
