"""The repro bundle: one zip that hands a stream bug to someone else.

    capture.sscap          the capture (replay it: `streamscope replay bundle.zip`)
    body.sse | body.ndjson the raw response body, exactly as received
    request.curl.sh        the request as a runnable curl command (key: $API_KEY)
    response-headers.txt   status line and response headers
    outcome.json           the turn as `streamscope replay --json` prints it, plus timings
    outcome.txt            the status-bar summary, the reason and the warnings
    versions.txt           app, Python and OS versions
    README.txt             what these files are

Nothing in it holds a secret: the capture is redacted when recorded and the curl command
reads the key from the environment.
"""

from __future__ import annotations

import io
import os
import platform
import struct
import sys
import zipfile
import zlib
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from streamscope.core.capture.format import Capture, CaptureError, dump_capture, read_capture
from streamscope.core.net.curl import to_curl
from streamscope.core.turn.model import Turn, turn_to_json
from streamscope.core.turn.outcome import format_bytes

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = [
    "CAPTURE_MEMBER",
    "MAX_CAPTURE_BYTES",
    "MAX_DIRECTORY_BYTES",
    "MAX_INFLATE_RATIO",
    "is_bundle",
    "read_repro_bundle",
    "write_repro_bundle",
]

CAPTURE_MEMBER = "capture.sscap"
_ZIP_MAGIC = b"PK\x03\x04"

_README = """\
StreamScope repro bundle
========================

This zip describes one streamed turn from an LLM endpoint, for a bug report.

  capture.sscap         Every network read of the response with its time, the request
                        (secrets redacted) and the response headers. Open it in
                        StreamScope ("Open capture...") or run:
                            streamscope replay capture.sscap --json
                        (the zip itself can be replayed the same way).
  {body_name:<21} The raw response body, exactly as received (all reads joined).
  request.curl.sh       The request as a curl command. Set API_KEY first:
                            API_KEY=... sh request.curl.sh
  response-headers.txt  The HTTP status line and response headers.
  outcome.json          How the turn ended: outcome, reason, text, tool calls, finish
                        reason, usage, warnings, and timings in seconds since the request.
  outcome.txt           The same in one line, with the reason and the warnings.
  versions.txt          StreamScope, Python and operating system versions.

The capture format (.sscap) is JSON Lines: a header line, one line per network read
({{"t": seconds, "b64": bytes}}), and an end line. API keys are never included.
"""


def is_bundle(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a zip (a repro bundle, presumably)."""
    return head.startswith(_ZIP_MAGIC)


def _relative_timings(turn: Turn) -> dict[str, float | None]:
    t = turn.timings
    base = t.request_sent
    names = ("headers", "first_byte", "first_token", "last_token", "end")
    out: dict[str, float | None] = {}
    for name in names:
        value = getattr(t, name)
        out[name] = round(value - base, 6) if value is not None and base is not None else None
    out["ttft"] = round(t.ttft, 6) if t.ttft is not None else None
    return out


def outcome_json(turn: Turn) -> dict[str, Any]:
    """``turn_to_json`` plus the summary, HTTP status, byte count and relative timings."""
    return {
        **turn_to_json(turn),
        "summary": turn.summary(),
        "status": turn.status,
        "bytes_received": turn.bytes_received,
        "malformed_frames": turn.malformed_frames,
        "terminal_signal": turn.terminal_signal,
        "timings": _relative_timings(turn),
    }


def _outcome_text(turn: Turn) -> str:
    lines = [turn.summary(), f"reason: {turn.reason}"]
    if turn.warnings:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in turn.warnings]
    else:
        lines.append("warnings: none")
    return "\n".join(lines) + "\n"


def _response_headers(capture: Capture) -> str:
    if capture.response is None:
        return "(no response)\n"
    lines = [f"HTTP {capture.response.status}"]
    lines += [f"{k}: {v}" for k, v in capture.response.headers]
    return "\n".join(lines) + "\n"


def _versions(app_version: str) -> str:
    return (
        f"StreamScope {app_version}\n"
        f"Python {platform.python_version()} ({platform.python_implementation()})\n"
        f"OS {platform.platform()}\n"
        f"Machine {platform.machine()}\n"
        f"Executable {'frozen' if getattr(sys, 'frozen', False) else 'python'}\n"
    )


def write_repro_bundle(
    zip_path: Path | str, capture: Capture, turn: Turn, *, app_version: str
) -> Path:
    """Write the bundle (see the module docstring); returns its path."""
    zip_path = Path(zip_path)
    body_name = "body.ndjson" if capture.framing() == "ndjson" else "body.sse"
    if capture.request is not None:
        r = capture.request
        curl = "#!/bin/sh\n# Set API_KEY in the environment first.\n" + to_curl(
            r.method, r.url, r.headers, r.body
        )
    else:
        curl = "#!/bin/sh\n# The request was not recorded.\n"
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open(CAPTURE_MEMBER, "w", force_zip64=True) as fp:
            dump_capture(capture, fp)
        with zf.open(body_name, "w", force_zip64=True) as fp:
            for _, data in capture.reads:
                fp.write(data)
        zf.writestr("request.curl.sh", curl)
        zf.writestr("response-headers.txt", _response_headers(capture))
        zf.writestr(
            "outcome.json", orjson.dumps(outcome_json(turn), option=orjson.OPT_INDENT_2) + b"\n"
        )
        zf.writestr("outcome.txt", _outcome_text(turn))
        zf.writestr("versions.txt", _versions(app_version))
        zf.writestr("README.txt", _README.format(body_name=body_name))
    return zip_path


MAX_CAPTURE_BYTES = 512 << 20
"""The most a bundle's capture may inflate to (512 MiB). Reading a capture holds about 0.8×
its size (a 1 GB one peaked at 782 MB), so this keeps opening any bundle under 512 MB of
memory; the app's own captures stay well below (a 1M-frame capture is 280 MB). Past this a
bundle is refused, not read into memory."""

MAX_INFLATE_RATIO = 200
"""How many times its compressed size a bundle's capture may inflate to, judged once past
:data:`RATIO_FROM_BYTES`. Captures are base64 JSON lines: a synthetic 1M-frame capture of
repeated tokens deflates 112×, real ones far less; a zip bomb deflates ~1000×."""

RATIO_FROM_BYTES = 8 << 20
"""The inflation ratio is checked from this many decompressed bytes on (a small capture of
identical frames may compress very well and harms no one)."""

MAX_DIRECTORY_BYTES = 1 << 20
"""The largest zip directory read. A bundle lists eight files (< 1 KB); a zip listing a
million members takes seconds and hundreds of MB to open, so it is refused first."""

_READ_CHUNK = 1 << 16
_EOCD = struct.Struct("<4s4H2LH")  # end of central directory record
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")
_COMPRESSIONS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}  # what a bundle is written with


class _ZipBomb(CaptureError):
    """The capture inflates beyond a limit (the message names the member)."""


def read_repro_bundle(zip_path: Path | str | IO[bytes], *, background: bool = False) -> Capture:
    """The capture inside a bundle (replay it with
    :func:`~streamscope.core.capture.replay.replay_capture`); ``background`` as for
    :func:`~streamscope.core.capture.format.read_capture`.

    A damaged or hostile bundle raises :class:`CaptureError` (one line, without the
    bundle's name): not a zip, a directory too long to list (:data:`MAX_DIRECTORY_BYTES`),
    no capture member, a capture that inflates beyond :data:`MAX_CAPTURE_BYTES` or
    :data:`MAX_INFLATE_RATIO` (judged from the sizes the zip declares, then as it streams),
    or a damaged capture inside (``capture.sscap: line 3: ...``)."""
    if isinstance(zip_path, (str, Path)):
        with open(zip_path, "rb") as fp:
            return _read_bundle(fp, background)
    return _read_bundle(zip_path, background)


def _read_bundle(fp: IO[bytes], background: bool) -> Capture:
    directory = _directory_size(fp)
    if directory > MAX_DIRECTORY_BYTES:
        raise CaptureError(
            f"the zip's directory is {format_bytes(directory)}; a repro bundle lists a few files"
        )
    try:
        with zipfile.ZipFile(fp) as zf:
            info = _capture_member(zf)
            with zf.open(info) as member:
                inflating = _Inflating(member, fp, info.header_offset)
                return _read_member(io.BufferedReader(inflating, _READ_CHUNK), background)
    except CaptureError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
        # (offsets that point before the file give OSError or ValueError)
        raise CaptureError(f"damaged zip ({_one_line(exc)})") from None


def _capture_member(zf: zipfile.ZipFile) -> zipfile.ZipInfo:
    """The capture's entry, if it can be read safely."""
    try:
        info = zf.getinfo(CAPTURE_MEMBER)
    except KeyError:
        raise CaptureError(f"not a repro bundle (no {CAPTURE_MEMBER})") from None
    if info.flag_bits & 0x1:
        raise CaptureError(f"{CAPTURE_MEMBER} is encrypted")
    if info.compress_type not in _COMPRESSIONS:  # bzip2 and lzma inflate unbounded per read
        raise CaptureError(
            f"{CAPTURE_MEMBER} is compressed with method {info.compress_type}, not deflate"
        )
    _check_inflation(info.file_size, info.compress_size)
    return info


def _read_member(stream: IO[bytes], background: bool) -> Capture:
    try:
        return read_capture(stream, background=background)
    except _ZipBomb:
        raise
    except CaptureError as exc:
        raise CaptureError(f"{CAPTURE_MEMBER}: {exc}") from None


def _check_inflation(size: int, compressed: int) -> None:
    """Refuse a capture of ``size`` bytes from ``compressed`` ones if it is too big."""
    if size > MAX_CAPTURE_BYTES:
        raise _ZipBomb(
            f"{CAPTURE_MEMBER} inflates beyond {MAX_CAPTURE_BYTES >> 20} MB (a zip bomb?)"
        )
    if size > RATIO_FROM_BYTES and size > MAX_INFLATE_RATIO * compressed:
        raise _ZipBomb(
            f"{CAPTURE_MEMBER} inflates beyond {MAX_INFLATE_RATIO}× its compressed size "
            f"of {format_bytes(compressed)} (a zip bomb?)"
        )


class _Inflating(io.RawIOBase):
    """A zip member as it decompresses, checked by :func:`_check_inflation` every read
    against the compressed bytes actually read from ``source`` (the zip file) since
    ``start`` (the member's offset): the sizes a zip declares may lie."""

    def __init__(self, member: IO[bytes], source: IO[bytes], start: int) -> None:
        self._member = member
        self._source = source
        self._start = start
        self._size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self._member.read(min(len(view), _READ_CHUNK))
        view[: len(data)] = data
        self._size += len(data)
        _check_inflation(self._size, self._source.tell() - self._start)
        return len(data)


def _directory_size(fp: IO[bytes]) -> int:
    """The size of a zip's central directory, read from its end record as
    :class:`zipfile.ZipFile` reads it (zip64 too); 0 when there is none (the zip reader
    then says what is wrong)."""
    end = fp.seek(0, os.SEEK_END)
    start = fp.seek(max(0, end - _EOCD.size - 0xFFFF))
    tail = fp.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        return 0
    size: int = _EOCD.unpack_from(tail, at)[5]
    record = start + at - _ZIP64_LOCATOR.size - _ZIP64_EOCD.size
    if record >= 0:  # a zip64 end record (just before its locator) overrides the size
        fp.seek(record)
        data = fp.read(_ZIP64_EOCD.size + _ZIP64_LOCATOR.size)
        if data[:4] == b"PK\x06\x06" and data[_ZIP64_EOCD.size :][:4] == b"PK\x06\x07":
            size = max(size, _ZIP64_EOCD.unpack_from(data)[8])
    fp.seek(0)
    return size


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
