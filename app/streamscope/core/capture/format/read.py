"""Reading the ``.sscap`` format, line by line as bytes, every known field checked: a
:class:`~streamscope.core.capture.format.model.CaptureError` names the line and the field."""

from __future__ import annotations

import binascii
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, get_args

import orjson

from streamscope.core.capture.format.model import (
    FORMAT,
    FORMAT_VERSION,
    Capture,
    CaptureEnd,
    CaptureError,
    CaptureRequest,
    CaptureResponse,
)
from streamscope.core.turn.outcome import EndKind, Outcome
from streamscope.core.wire.dialects import AUTO, dialect_names

_MAGIC = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"format"\s*:\s*"streamscope-capture"')


def is_capture(head: bytes) -> bool:
    """Whether a file starting with ``head`` (its first bytes) is a ``.sscap`` capture."""
    return _MAGIC.match(head) is not None


MAX_LINE_VALUES = 1 << 21
"""The most JSON values one line may hold (counted roughly: strings, containers, commas).
Each costs ~64 bytes once read, so a line of 64 MB of ``[],`` would need 1.3 GB; this
bounds one line to ~130 MB. A capture's fullest line, the header with the request body,
holds far fewer (a 1 MB conversation: ~20,000); read lines hold 4."""

YIELD_EVERY_LINES = 32
"""With ``background=True``, the reader lets other threads run this often (see below)."""


def read_capture(source: Path | str | IO[bytes], *, background: bool = False) -> Capture:
    """Read a ``.sscap`` file (a path or a binary stream), line by line.

    A damaged file raises :class:`CaptureError` with one line naming the line and the field
    (``line 1: response.status: expected an integer, got "200x"``); a last line cut short
    (the writer was killed) ends the reads instead.

    ``background``: this runs in a worker thread while a UI thread waits for the
    interpreter lock; yield it every :data:`YIELD_EVERY_LINES` lines (measured: without
    it, reading a 300 MB capture stalled the window's event loop up to ~90 ms at a time;
    with it, < 10 ms)."""
    if isinstance(source, (str, Path)):
        with open(source, "rb") as fp:
            return _parse(fp, background)
    return _parse(source, background)


def _parse(fp: IO[bytes], background: bool = False) -> Capture:
    first = fp.readline()
    if not is_capture(first):
        raise CaptureError("not a StreamScope capture (first line does not identify one)")
    _check_values(first, _At(1))
    capture = _header(_json_object(first.removeprefix(b"\xef\xbb\xbf"), _At(1)))
    loads = orjson.loads
    a2b = binascii.a2b_base64
    append = capture.reads.append
    absent = _ABSENT
    for lineno, line in enumerate(fp, start=2):
        if background and lineno % YIELD_EVERY_LINES == 0:
            time.sleep(0)
        if len(line) > MAX_LINE_VALUES:
            _check_values(line, _At(lineno))
        try:
            obj = loads(line)
        except orjson.JSONDecodeError as exc:
            if not line.strip():
                continue
            if not line.endswith(b"\n"):  # the writer was killed mid-line: keep what came
                break
            raise _At(lineno).not_json(exc) from None
        if type(obj) is not dict:
            raise _At(lineno).error("", f"expected an object, got {_shown(obj)}")
        b64 = obj.get("b64", absent)
        if b64 is not absent:
            t = obj.get("t")
            if type(t) is not float and type(t) is not int:
                raise _read_error(obj, _At(lineno))
            try:
                append(t, a2b(b64, strict_mode=True))
            except (ValueError, TypeError):
                raise _read_error(obj, _At(lineno)) from None
        elif "end" in obj:
            capture.end = _end(obj["end"], _At(lineno))
    return capture


# -- checking the fields -------------------------------------------------------------------

_ABSENT = object()
_Kind = tuple[tuple[type, ...], str]
_STRING: _Kind = ((str,), "a string")
_NUMBER: _Kind = ((float, int), "a number")
_INTEGER: _Kind = ((int,), "an integer")
_OBJECT: _Kind = ((dict,), "an object")
_ARRAY: _Kind = ((list,), "an array")
_END_KINDS = frozenset(get_args(EndKind))
_OUTCOMES = frozenset(o.value for o in Outcome)


def _shown(value: Any, limit: int = 40) -> str:
    """A value as an error message quotes it: its JSON, clipped (one line)."""
    text = orjson.dumps(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class _At:
    """Where a value sits in the file, for error messages: a line and the object around it
    (``response.``). ``get`` checks a field's type (``bool`` is not a number)."""

    line: int
    path: str = ""

    def inside(self, key: str) -> _At:
        return _At(self.line, f"{self.path}{key}.")

    def error(self, key: str, problem: str) -> CaptureError:
        where = f"{self.path}{key}".rstrip(".")
        return CaptureError(
            f"line {self.line}: {where}: {problem}" if where else f"line {self.line}: {problem}"
        )

    def not_json(self, exc: orjson.JSONDecodeError) -> CaptureError:
        return self.error("", f"not valid JSON ({exc.msg} at byte {exc.pos})")

    def get(self, obj: dict[str, Any], key: str, kind: _Kind, *, required: bool = False) -> Any:
        if key not in obj:
            if required:
                raise self.error(key, "missing")
            return None
        value = obj[key]
        types, expected = kind
        if value is None and not required:
            return None
        if type(value) not in types:
            raise self.error(key, f"expected {expected}, got {_shown(value)}")
        return value


def _check_values(line: bytes, at: _At) -> None:
    """Refuse a line with more than :data:`MAX_LINE_VALUES` values before reading it."""
    if len(line) <= MAX_LINE_VALUES:
        return
    values = line.count(b",") + line.count(b"[") + line.count(b"{") + line.count(b'"') // 2
    if values > MAX_LINE_VALUES:
        raise at.error(
            "", f"too many JSON values to read ({values:,}; at most {MAX_LINE_VALUES:,})"
        )


def _json_object(line: bytes, at: _At) -> dict[str, Any]:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise at.not_json(exc) from None
    if type(obj) is not dict:
        raise at.error("", f"expected an object, got {_shown(obj)}")
    return obj


def _header(head: dict[str, Any]) -> Capture:
    """The first line: what the file is, then the request and the response."""
    at = _At(1)
    if head.get("format") != FORMAT:
        raise at.error("format", f"expected {_shown(FORMAT)}, got {_shown(head.get('format'))}")
    version = at.get(head, "version", _INTEGER, required=True)
    if version > FORMAT_VERSION:
        raise at.error(
            "version",
            f"capture format version {version} is not supported "
            f"(this app reads version {FORMAT_VERSION})",
        )
    if version < 1:
        raise at.error("version", f"expected a positive integer, got {version}")
    dialect = at.get(head, "dialect", _STRING) or AUTO
    if dialect not in dialect_names(with_auto=True):
        known = ", ".join(dialect_names(with_auto=True))
        raise at.error("dialect", f"unknown dialect {_shown(dialect)} (known: {known})")
    return Capture(
        dialect,
        _request(at.get(head, "request", _OBJECT), at.inside("request")),
        _response(at.get(head, "response", _OBJECT), at.inside("response")),
        created=at.get(head, "created", _STRING) or "",
        app_version=at.get(head, "app_version", _STRING) or "",
    )


def _b64(obj: dict[str, Any], key: str, at: _At) -> bytes | None:
    value = at.get(obj, key, _STRING)
    if value is None:
        return None
    try:
        return binascii.a2b_base64(value, strict_mode=True)
    except ValueError as exc:
        raise at.error(key, f"not valid base64 ({exc})") from None


def _pairs(obj: dict[str, Any], key: str, at: _At) -> tuple[tuple[str, str], ...]:
    """Headers: a list of ``[name, value]`` string pairs (an object of strings is read too)."""
    value = obj.get(key)
    if value is None:
        return ()
    if type(value) is dict:
        value = list(value.items())
    elif type(value) is not list:
        raise at.error(key, f"expected a list of [name, value] pairs, got {_shown(value)}")
    for i, pair in enumerate(value):
        if not (
            type(pair) in (list, tuple)
            and len(pair) == 2
            and type(pair[0]) is str
            and type(pair[1]) is str
        ):
            raise at.error(
                f"{key}[{i}]", f"expected a [name, value] pair of strings, got {_shown(pair)}"
            )
    return tuple((name, text) for name, text in value)


def _request(obj: dict[str, Any] | None, at: _At) -> CaptureRequest | None:
    if obj is None:
        return None
    body = _b64(obj, "body_b64", at)
    if body is None:
        body = orjson.dumps(obj["body"]) if obj.get("body") is not None else b""
    method = at.get(obj, "method", _STRING)
    return CaptureRequest(
        "POST" if method is None else method,
        at.get(obj, "url", _STRING) or "",
        _pairs(obj, "headers", at),
        body,
    )


def _response(obj: dict[str, Any] | None, at: _At) -> CaptureResponse | None:
    if obj is None:
        return None
    status = at.get(obj, "status", _INTEGER, required=True)
    if not 100 <= status <= 999:
        raise at.error("status", f"expected an HTTP status (100 to 999), got {status}")
    t = at.get(obj, "t", _NUMBER)
    return CaptureResponse(status, _pairs(obj, "headers", at), 0.0 if t is None else float(t))


def _read_error(obj: dict[str, Any], at: _At) -> CaptureError:
    """What is wrong with a read line: ``t`` must be a number, ``b64`` base64 text."""
    try:
        at.get(obj, "t", _NUMBER, required=True)
        at.get(obj, "b64", _STRING, required=True)
        _b64(obj, "b64", at)
    except CaptureError as exc:
        return exc
    return at.error("", "damaged read")


def _end(value: Any, at: _At) -> CaptureEnd:
    """The last line: how the stream ended and the live turn's outcome."""
    obj = at.get({"end": value}, "end", _OBJECT, required=True)
    at = at.inside("end")
    kind = at.get(obj, "kind", _STRING, required=True)
    if kind not in _END_KINDS:
        raise at.error("kind", f"unknown end kind {_shown(kind)}")
    outcome = at.get(obj, "outcome", _STRING)
    if outcome is not None and outcome not in _OUTCOMES:
        raise at.error("outcome", f"unknown outcome {_shown(outcome)}")
    elapsed = at.get(obj, "elapsed", _NUMBER)
    timeout = at.get(obj, "timeout", _NUMBER)
    return CaptureEnd(
        kind=kind,
        elapsed=None if elapsed is None else float(elapsed),
        detail=at.get(obj, "detail", _STRING) or "",
        timeout=None if timeout is None else float(timeout),
        body=_b64(obj, "body_b64", at),
        outcome=outcome,
        reason=at.get(obj, "reason", _STRING) or "",
        faults=_faults(obj, at),
    )


def _faults(obj: dict[str, Any], at: _At) -> tuple[dict[str, Any], ...]:
    """The end line's ``faults``: an array of objects, each with a string ``fault``."""
    faults = at.get(obj, "faults", _ARRAY) or []
    for i, fault in enumerate(faults):
        if type(fault) is not dict or type(fault.get("fault")) is not str:
            raise at.error(
                "faults", f"item {i}: expected an object with a fault, got {_shown(fault)}"
            )
    return tuple(faults)
