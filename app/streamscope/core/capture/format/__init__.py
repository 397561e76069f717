"""Captures: a turn's request (secrets redacted), response head and every network read
with its time, in one ``.sscap`` file; recorded live, replayed through the same pipeline.

The ``.sscap`` format (version 1) is UTF-8 JSON Lines, one object per line::

    {"format": "streamscope-capture", "version": 1, "created": "2026-11-29T21:30:00+00:00",
     "app_version": "0.1.0", "dialect": "openai",
     "request": {"method": "POST", "url": "https://host/v1/chat/completions?key=***",
                 "headers": [["authorization", "Bearer ***"], ...],
                 "body": {...}            # the JSON body, or "body_b64": "..." if not JSON
                },
     "response": {"status": 200, "headers": [["content-type", "text/event-stream"], ...],
                  "t": 0.012}}
    {"t": 0.0153, "b64": "ZGF0YTogey4uLn0KCg=="}        # one line per network read
    ...
    {"end": {"kind": "eof", "elapsed": 1.25, "detail": "", "timeout": null,
             "outcome": "completed", "reason": "[DONE] received (finish_reason=stop)"}}

- The first line identifies the file: it starts with ``{"format":"streamscope-capture"``
  (see :func:`is_capture`). ``request``/``response`` are ``null`` when unknown (the
  request failed before any response).
- ``t`` is seconds since the request was sent (monotonic clock); ``b64`` the exact bytes
  of that read (standard base64).
- ``end`` is how the byte stream ended (:class:`~streamscope.core.turn.outcome.StreamEnd`:
  ``kind``, ``elapsed``, ``detail``, ``timeout``; ``body_b64`` for an error body when
  known), plus the live turn's ``outcome`` and ``reason``, and ``faults`` when faults on
  cue changed what the client was sent (the tap's ``--fault``: an array of objects such as
  ``{"fault": "cut@frame:5", "kind": "cut", "when": "always", "applied": true, "frame": 5,
  "byte": 812, "at": 0.41}``; absent otherwise). A capture cut short (the app
  was killed) has no ``end`` line and replays as a broken connection.
- Secrets never reach the file: request headers and URL go through
  :mod:`streamscope.core.redact`. Readers ignore unknown keys; a newer ``version`` is
  refused, and so is a known field of the wrong type, an unknown ``dialect``, end ``kind``
  or ``outcome``, or invalid base64 (:class:`CaptureError` names the line and the field).

The package holds the data types (:mod:`.model`), the writer (:mod:`.write`) and the reader
(:mod:`.read`); import them from here. Reading is streaming-friendly:
the file is read line by line as bytes and the reads are kept in one ``bytearray`` with
arrays of offsets and times (:class:`ReadLog`), so a 100 MB capture needs little more than
100 MB.
"""

from streamscope.core.capture.format.model import (
    CAPTURE_SUFFIX,
    FORMAT,
    FORMAT_VERSION,
    Capture,
    CaptureEnd,
    CaptureError,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
    now_iso,
)
from streamscope.core.capture.format.read import is_capture, read_capture
from streamscope.core.capture.format.write import (
    dump_capture,
    end_line,
    header_line,
    read_line,
    write_capture,
)

__all__ = [
    "CAPTURE_SUFFIX",
    "FORMAT",
    "FORMAT_VERSION",
    "Capture",
    "CaptureEnd",
    "CaptureError",
    "CaptureRequest",
    "CaptureResponse",
    "ReadLog",
    "dump_capture",
    "end_line",
    "header_line",
    "is_capture",
    "now_iso",
    "read_capture",
    "read_line",
    "write_capture",
]
