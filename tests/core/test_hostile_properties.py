"""Property: no file makes `streamscope replay` (or the window's capture reader) crash.

Random bytes, and random damage to a valid capture and to a bundle holding one, go through
``replay`` in-process (a path or stdin, each dialect) and through the readers. Every run
ends with exit code 0, 3 or 4 and the JSON object, or 2 and one line on stderr — within
10 s and, for these inputs of at most 80 KB, 64 MB. The big cases (inputs up to 64 MB,
marked slow) run in a subprocess that reports its CPU time and peak memory (< 512 MB).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamscope.core.capture.bundle import is_bundle, read_repro_bundle
from streamscope.core.capture.format import CaptureError, is_capture, read_capture
from streamscope.headless import REPLAY_READ
from support.hostile import (
    CAPTURE_HEADER,
    EXIT,
    many_members_zip,
    replay,
    sample_capture,
    zip_bomb,
    zip_of,
)

EXAMPLES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DIALECTS = st.sampled_from([None, "auto", "openai", "anthropic", "gemini", "responses", "ollama"])
SECONDS = 10.0
SMALL_INPUT_PEAK = 64 << 20
"""Peak traced memory allowed for one small example (the budget is 512 MB for 64 MB)."""


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="streamscope-hostile-") as tmp:
        yield Path(tmp)


def window_load(path: Path) -> None:
    """What File > Open capture does off the UI thread (a bundle by its first bytes)."""
    with path.open("rb") as f:
        head = f.read(64)
    if is_bundle(head):
        read_repro_bundle(path, background=True)
    else:
        read_capture(path, background=True)


def check(data: bytes, workdir: Path, *, dialect: str | None, stdin: bool) -> None:
    """Replay ``data`` and read it as the window does: a result or one line, never an
    exception; in time and memory."""
    path = workdir / "input"
    path.write_bytes(data)
    args = ["-" if stdin else str(path), "--json"]
    if dialect is not None:
        args += ["--dialect", dialect]
    start = time.monotonic()
    tracemalloc.start()
    try:
        code, out, err = replay(args, stdin=data if stdin else None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < SECONDS
    assert peak < SMALL_INPUT_PEAK, f"{peak / 2**20:.0f} MB"
    if code == 2:
        assert out == "" and err.startswith("streamscope replay: error: ")
        assert err.endswith("\n") and err.count("\n") == 1, err
    else:
        result = json.loads(out)
        assert (code, err) == (EXIT[result["outcome"]], "")
        assert code != EXIT["cancelled"]
    try:
        window_load(path)
        refused = False
    except CaptureError as exc:
        assert "\n" not in str(exc)
        refused = True
    if is_bundle(data[:4]) or is_capture(data[:REPLAY_READ]):
        assert refused == (code == 2)  # the window refuses what replay refuses


# -- random bytes --------------------------------------------------------------------------

PREFIXES = [
    CAPTURE_HEADER,
    CAPTURE_HEADER[:40],
    b'{"format":"streamscope-capture"',
    b"PK\x03\x04",
    b"data: ",
    b"event: error\ndata: ",
    b"{",
    b'{"error":',
    b"<!DOCTYPE html><title>",
    b"\xef\xbb\xbf",
    b"\n" * 70_000,  # past the framing sniff
]


@EXAMPLES
@given(
    data=st.one_of(
        st.binary(max_size=4096),
        st.tuples(st.sampled_from(PREFIXES), st.binary(max_size=4096)).map(b"".join),
    ),
    dialect=DIALECTS,
    stdin=st.booleans(),
)
def test_random_bytes_never_crash_replay(
    workdir: Path, data: bytes, dialect: str | None, stdin: bool
) -> None:
    check(data, workdir, dialect=dialect, stdin=stdin)


# -- damaged captures ----------------------------------------------------------------------

JSON_VALUES = st.one_of(
    st.sampled_from(
        [
            b"null",
            b"true",
            b"0",
            b"-1",
            b"1e308",
            b"-0.0",
            b"18446744073709551615",
            b"1" * 40,
            b'""',
            b'"200x"',
            b'"\\u0000"',
            b'"\\ud800"',
            b'"\xff\xfe"',
            b"[]",
            b"{}",
            b"[" * 1100 + b"]" * 1100,
            b"[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]",
            b'"' + b"QUFB" * 1000 + b'"',
            b'"QQ="',
            b'"!!"',
            b'["a"]',
            b'[["a",1]]',
            b'{"kind":"eof"}',
            b'{"kind":"meteor"}',
            b'{"status":"x"}',
            b'{"b64":"QQ==","t":0}',
        ]
    ),
    st.integers(-(2**70), 2**70).map(lambda n: str(n).encode()),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: repr(f).encode()),
    st.text(max_size=12).map(orjson.dumps),
)
_HOLE = "\x00hole\x00"


def _slots(obj: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every ``(container, key)`` in a JSON value."""
    items = (
        obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    )
    for key, value in items:
        out.append((obj, key))
        _slots(value, out)
    return out


@st.composite
def json_edit(draw: st.DrawFn, line: bytes) -> bytes:
    """One edit of a JSON line: a field replaced by a hostile value, deleted, nested, or an
    unknown field added."""
    obj = orjson.loads(line)
    slots = _slots(obj, [])
    if not slots:  # ({}, [] or a scalar: an earlier edit may leave one) something to edit
        obj = {"x": obj}
        slots = [(obj, "x")]
    container, key = draw(st.sampled_from(slots))
    value = draw(JSON_VALUES)
    match draw(st.sampled_from(["replace", "delete", "nest", "add"])):
        case "delete" if isinstance(container, dict):
            del container[key]
            return orjson.dumps(obj) + b"\n"
        case "nest":
            container[key] = draw(st.sampled_from([[container[key]], {"x": container[key]}]))
            return orjson.dumps(obj) + b"\n"
        case "add" if isinstance(container, dict):
            container["unknown_" + str(key)] = _HOLE
        case _:
            container[key] = _HOLE
    return orjson.dumps(obj).replace(orjson.dumps(_HOLE), value) + b"\n"


@st.composite
def byte_edit(draw: st.DrawFn, data: bytes) -> bytes:
    """Flip, insert, delete or cut bytes (NULs, invalid UTF-8, line ends among them)."""
    at = draw(st.integers(0, len(data)))
    match draw(st.sampled_from(["flip", "insert", "delete", "cut"])):
        case "flip" if at < len(data):
            return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
        case "insert":
            junk = draw(
                st.one_of(
                    st.binary(max_size=16), st.sampled_from([b"\0", b"\xff\xc3", b"\n", b"\r"])
                )
            )
            return data[:at] + junk + data[at:]
        case "delete":
            return data[:at] + data[at + draw(st.integers(1, 64)) :]
        case _:
            return data[:at]


@st.composite
def damaged_capture(draw: st.DrawFn) -> bytes:
    lines = sample_capture().splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        match draw(st.sampled_from(["json", "json", "duplicate", "drop", "swap", "bytes"])):
            case "json":
                try:
                    lines[i] = draw(json_edit(lines[i]))
                except orjson.JSONDecodeError:  # (an earlier edit broke the line)
                    lines[i] = draw(byte_edit(lines[i]))
            case "duplicate":
                lines.insert(i, lines[i])
            case "drop" if len(lines) > 1:
                del lines[i]
            case "swap":
                j = draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
            case _:
                lines = draw(byte_edit(b"".join(lines))).splitlines(keepends=True) or [b""]
    return b"".join(lines)


@EXAMPLES
@given(data=damaged_capture(), dialect=DIALECTS, stdin=st.booleans())
def test_damaged_captures_never_crash_replay(
    workdir: Path, data: bytes, dialect: str | None, stdin: bool
) -> None:
    check(data, workdir, dialect=dialect, stdin=stdin)


# -- damaged bundles -----------------------------------------------------------------------


@st.composite
def damaged_bundle(draw: st.DrawFn) -> bytes:
    capture = draw(st.one_of(st.just(sample_capture()), damaged_capture()))
    name = draw(st.sampled_from(["capture.sscap"] * 4 + ["Capture.sscap", "capture.sscap/", "x"]))
    members = {name: capture, "body.sse": b"data: [DONE]\n\n", "README.txt": b"hello"}
    compression = draw(st.sampled_from([zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED]))
    data = zip_of(members, compression)
    if draw(st.booleans()):  # a second capture member (the reader takes the last)
        data = zip_of({**members, "capture.sscaq": sample_capture()}, compression).replace(
            b"capture.sscaq", b"capture.sscap"
        )
    for _ in range(draw(st.integers(0, 3))):
        data = draw(byte_edit(data))
    return data


@EXAMPLES
@given(data=damaged_bundle(), dialect=DIALECTS, stdin=st.booleans())
def test_damaged_bundles_never_crash_replay(
    workdir: Path, data: bytes, dialect: str | None, stdin: bool
) -> None:
    check(data, workdir, dialect=dialect, stdin=stdin)


# -- big inputs, measured in a subprocess --------------------------------------------------

CHILD = """
import contextlib, io, json, sys, time
from streamscope.cli import main
out, err = io.StringIO(), io.StringIO()
wall, cpu = time.perf_counter(), time.process_time()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(["replay", *sys.argv[1:]])
with open("/proc/self/status") as status:  # (ru_maxrss would count the parent's pages)
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({
    "code": code, "out": out.getvalue()[:300], "err": err.getvalue()[:300],
    "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
    "peak_mb": peak / 1024,
}))
"""
MB = 1 << 20


def _one_read_capture(size: int) -> bytes:
    import base64
    import random

    data = random.Random(7).randbytes(size * 3 // 4 - 200)
    return CAPTURE_HEADER + b'{"t":0.1,"b64":"' + base64.b64encode(data) + b'"}\n'


def _dense_header(size: int) -> bytes:
    pairs = b",".join([b'["a","b"]'] * ((size - 200) // 10))
    return CAPTURE_HEADER.replace(b'"headers":[', b'"headers":[' + pairs + b",")


BIG: dict[str, tuple[Callable[[], bytes], set[int], str]] = {
    # name: (input, exit codes, what stderr or the reason says)
    "zip bomb, 1.5 GB inflated": (lambda: zip_bomb(1536 * MB), {2}, "(a zip bomb?)"),
    "zip of 700,000 members (60 MB)": (lambda: many_members_zip(700_000), {2}, "directory"),
    "64 MB of random bytes": (
        lambda: __import__("random").Random(1).randbytes(64 * MB),
        {3, 4},
        "",
    ),
    "64 MB of blank lines": (lambda: b"\n" * (64 * MB), {3}, "connection closed"),
    "64 MB HTML page": (
        lambda: (
            b"<!DOCTYPE html><html><title>502 Bad Gateway</title>\n"
            + b"<p>filler</p>\n" * (64 * MB // 14)
        )[: 64 * MB],
        {4},
        "HTML error page: 502 Bad Gateway",
    ),
    "64 MB capture of one 47 MB read": (lambda: _one_read_capture(64 * MB), {3}, "broken"),
    "64 MB capture header of 6.7M header pairs": (
        lambda: _dense_header(64 * MB),
        {2},
        "too many JSON values",
    ),
}


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("name", list(BIG))
def test_big_hostile_inputs_stay_within_10_s_and_512_mb(name: str, tmp_path: Path) -> None:
    make, codes, says = BIG[name]
    path = tmp_path / "input"
    path.write_bytes(make())
    assert path.stat().st_size <= 64 * MB
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), "--json"],
        capture_output=True,
        timeout=120,
        check=True,
    )
    result = json.loads(run.stdout)
    print(
        f"{name}: {result['wall']:.2f} s wall, {result['cpu']:.2f} s CPU, "
        f"{result['peak_mb']:.0f} MB peak; exit {result['code']}"
    )
    assert result["code"] in codes, result
    assert says in (result["err"] or result["out"])
    assert result["cpu"] < SECONDS, result
    assert result["peak_mb"] < 512, result


def test_the_windows_reader_refuses_what_replay_refuses(workdir: Path) -> None:
    """(The property's oracle: a bundle without a capture, checked both ways.)"""
    data = zip_of({"README.txt": b"x"})
    check(data, workdir, dialect=None, stdin=False)
    with pytest.raises(CaptureError, match=r"no capture\.sscap"):
        read_repro_bundle(io.BytesIO(data))
