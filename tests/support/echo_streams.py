"""Streams that echo a key in pieces among non-ASCII text, for the planted-key tests of the
recorders (chat and tap): the pieces sit next to Cyrillic, CJK, Devanagari or emoji (astral:
a surrogate pair when escaped) and ``<``, ``&``, ``/`` in the same JSON string, written as raw
UTF-8 or with ``\\u`` escapes as each kind of server writes them (see :data:`ENCODINGS`),
with non-ASCII frames and fields around them; and what the stream must be once the key is
masked, computed here, not by the code under test (``*`` for each of the key's characters,
everything else byte for byte)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

AROUND: dict[str, tuple[str, str]] = {
    "cyrillic": ("Ваш ключ: ", " — готово"),
    "cjk": ("密钥是「", "」。谢谢"),
    "emoji": ("🔑 ", " 🎉✅🐀\U0010fffd"),  # (🐀: \ud83d\udc00; U+10FFFD: \udbff\udffd)
    "devanagari": ("कुंजी: ", " — ठीक"),  # (U+0900…: three UTF-8 bytes led by 0xE0)
}
"""Text written right before and right after the key, in the same deltas as its pieces."""

ENCODINGS = ("raw", "escaped", "mixed", "go", "dotnet", "php")
"""How the frames' JSON is written: raw UTF-8 (Node, serde), ``\\u`` escapes (Python's
``json.dumps``), the frames alternating, Go (raw UTF-8, ``<>&`` as ``\\u003c``…), .NET
(upper-case ``\\u041A``, ``<>&`` escaped too), PHP (``\\u`` escapes and ``\\/``)."""

STOP = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
DONE = b"data: [DONE]\n\n"


@dataclass(frozen=True)
class EchoStream:
    body: bytes
    """The stream as the server sent it."""
    masked: bytes
    """The same stream with each of the key's characters replaced by ``*``."""
    text: str
    """The answer a replay of ``masked`` shows."""
    arguments: str
    """The tool call's arguments a replay of ``masked`` shows."""


def _chat_frame(delta: dict[str, object], encoding: str) -> bytes:
    obj = {"model": "модель-模型-🙂", "choices": [{"index": 0, "delta": delta}]}
    text = json.dumps(obj, ensure_ascii=encoding in ("escaped", "dotnet", "php"))
    if encoding in ("go", "dotnet"):  # (the frames have <, >, & in strings only)
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    if encoding == "dotnet":
        text = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m[1].upper(), text)
    if encoding == "php":
        text = text.replace("/", "\\/")
    return b"data: " + text.encode() + b"\n\n"


def _tool(arguments: str) -> dict[str, object]:
    return {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}


def echo_stream(key: str, around: str, encoding: str) -> EchoStream:
    """An OpenAI chat stream whose answer spells ``key`` out three times in pieces (cut
    differently each time, twice the first piece after ``around``'s text and the last before
    it), and whose tool call's arguments spell it out once, between CJK and Cyrillic."""
    before, after = AROUND[around]
    stars = "*" * len(key)
    texts = [
        "Привет 你好 👋 ",
        f"{before}<{key[:5]}",  # (e.g. "Ваш ключ: <sk-pr" + "oj-…")
        key[5:12],
        f"{key[12:]}> &{after}",
        " ещё раз / again: ",
        f"{before}{key[:1]}",
        f"{key[1:-1]}",
        f"{key[-1:]}{after}",
        " и снова: ",
        key[:10],
        f"{key[10:]}.",
    ]
    arguments = ['{"密钥": "', key[:7], f'{key[7:]}", "url": "/a?b=1&c=<2>", "имя": "🙂"}}']

    def build(masked: bool) -> bytes:
        said, args = _split(texts, key, masked), _split(arguments, key, masked)
        deltas = [{"content": t} for t in said] + [_tool(a) for a in args]
        encodings = [("raw", "escaped")[i % 2] if encoding == "mixed" else encoding
                     for i in range(len(deltas))]  # fmt: skip
        sent = b"".join(_chat_frame(d, e) for d, e in zip(deltas, encodings, strict=True))
        return sent + STOP + DONE

    return EchoStream(
        build(False),
        build(True),
        "".join(texts).replace(key, stars),
        "".join(arguments).replace(key, stars),
    )


def _split(pieces: list[str], key: str, masked: bool) -> list[str]:
    """``pieces`` with, when ``masked``, each character that belongs to an occurrence of
    ``key`` in their concatenation replaced by ``*`` (piece by piece: same lengths)."""
    if not masked:
        return pieces
    whole = "".join(pieces)
    hidden = [False] * len(whole)
    at = whole.find(key)
    while at >= 0:
        hidden[at : at + len(key)] = [True] * len(key)
        at = whole.find(key, at + 1)
    out, pos = [], 0
    for piece in pieces:
        out.append("".join("*" if hidden[pos + i] else c for i, c in enumerate(piece)))
        pos += len(piece)
    return out


def cut(body: bytes, size: int) -> list[bytes]:
    """``body`` as reads of ``size`` bytes (cutting characters, escapes and the key)."""
    return [body[i : i + size] for i in range(0, len(body), size)]
