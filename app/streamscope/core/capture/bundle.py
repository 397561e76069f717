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

import platform
import sys
import zipfile
from pathlib import Path
from typing import IO, Any

import orjson

from streamscope.core.capture.format import Capture, dump_capture, read_capture
from streamscope.core.net.curl import to_curl
from streamscope.core.turn.model import Turn
from streamscope.core.turn.pipeline import turn_to_json

__all__ = ["CAPTURE_MEMBER", "is_bundle", "read_repro_bundle", "write_repro_bundle"]

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


def read_repro_bundle(zip_path: Path | str | IO[bytes], *, background: bool = False) -> Capture:
    """The capture inside a bundle (replay it with
    :func:`~streamscope.core.capture.recorder.replay_capture`); ``background`` as for
    :func:`~streamscope.core.capture.format.read_capture`."""
    try:
        with zipfile.ZipFile(zip_path) as zf, zf.open(CAPTURE_MEMBER) as fp:
            return read_capture(fp, background=background)
    except KeyError:
        raise ValueError(f"{zip_path}: not a repro bundle (no {CAPTURE_MEMBER})") from None
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{zip_path}: {exc}") from None
