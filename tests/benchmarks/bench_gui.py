"""GUI benchmarks: firehose into the real window, a 1,000,000-frame capture, cold start.

    .venv/bin/python tests/benchmarks/bench_gui.py [--quick] [--only firehose|capture|coldstart]

(``tests/benchmarks/run_all.py`` runs this with the decoder and pipeline benchmarks and prints
one table.) Every case runs in a fresh subprocess, so each peak RSS (``VmHWM``) is its own.
Everything listens on 127.0.0.1 only; every subprocess has a timeout.

1. **Firehose** — a loopback server of our own (below) streams N OpenAI chat chunks with no
   delay, in two variants: ``line`` (``t0 t1 t2 ...``: the demo's ``demo-firehose`` deltas, one
   endless line) and ``paragraphs`` (word tokens forming Markdown paragraphs, headings, lists
   and code blocks). Peers on the same stream, in the same run: the real ``MainWindow``
   (offscreen, inspector open on Frames, GC on the Qt thread as ``run_app`` does, with a real
   profile: the conversation is saved to SQLite and the capture written), headless
   ``streamscope send --json`` and the official ``openai`` SDK. Times are in-process from the
   request to the end (the GUI's: to ``completed`` and to the final Markdown rendered),
   excluding interpreter start and imports, so they compare the same work.
   Stall = lateness of a 5 ms repeating timer, from the submit until the card finished
   rendering. The window is open for a second before the submit (as for a user typing), and
   each case is the first turn of a fresh process, so first-send costs are included. Each
   size runs :data:`REPEATS` times: times are medians, the p99 is over all runs' ticks.
2. **Capture** — a 1,000,000-frame ``.sscap`` is written, then opened in the window as
   *File > Open capture… > Instantly* does (``MainWindow.open_capture``: read off the UI
   thread, replayed through the TurnRunner into the chat card and the inspector); the Frames
   table is then scrolled to the end and its last row selected.
3. **Cold start** — process start to the first paint of the window under a private Xvfb,
   against a bare PySide6 script showing an empty ``QMainWindow``; alternated, best of N.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
CASE_TIMEOUT = 300.0
"""No single subprocess may run longer than this (seconds)."""


# -- results ------------------------------------------------------------------------------


@dataclass
class Row:
    """One figure of the table. ``ok`` is ``None`` when the figure has no target."""

    bench: str
    metric: str
    value: str
    target: str = ""
    ok: bool | None = None


def check(bench: str, metric: str, value: float, limit: float, fmt: str, unit: str = "") -> Row:
    return Row(bench, metric, f"{value:{fmt}}{unit}", f"<= {limit:{fmt}}{unit}", value <= limit)


def info(bench: str, metric: str, value: str) -> Row:
    return Row(bench, metric, value)


def print_table(rows: list[Row]) -> None:
    widths = [
        max(len(h), *(len(getattr(r, f)) for r in rows))
        for h, f in (
            ("benchmark", "bench"),
            ("figure", "metric"),
            ("value", "value"),
            ("target", "target"),
        )
    ]
    head = ("benchmark", "figure", "value", "target", "")
    line = "  ".join(f"{h:<{w}}" for h, w in zip(head, [*widths, 4], strict=True))
    print(line)
    print("-" * len(line))
    for r in rows:
        verdict = "" if r.ok is None else "PASS" if r.ok else "FAIL"
        cells = (r.bench, r.metric, r.value, r.target)
        print("  ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True)) + f"  {verdict}")


def peak_rss_mb() -> float:
    """This process's peak resident set size (VmHWM), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_case(
    args: list[str], timeout: float = CASE_TIMEOUT, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``bench_gui.py --case ...`` in a fresh interpreter; its last stdout line is JSON."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, str(HERE), "--case", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"case {args} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- the loopback firehose server ---------------------------------------------------------

_WORDS = [
    "the",
    "stream",
    "of",
    "tokens",
    "arrives",
    "quickly",
    "and",
    "we",
    "render",
    "it",
    "without",
    "freezing",
    "the",
    "window",
    "while",
    "every",
    "frame",
    "keeps",
    "its",
    "exact",
    "bytes",
    "so",
    "a",
    "bug",
    "can",
    "be",
    "traced",
    "back",
    "to",
    "the",
    "wire",
    "a",
    "model",
    "may",
    "think",
    "first",
    "then",
    "answer",
    "with",
    "text",
    "tables",
    "lists",
    "or",
    "code",
    "blocks",
    "the",
    "inspector",
    "shows",
    "each",
    "frame",
    "its",
    "timing",
    "and",
    "size",
    "café",
    "naïve",
    "über",
    "東京",
    "データ",
    "résumé",
]


def paragraph_tokens(n: int, seed: int = 7) -> list[str]:
    """``n`` word-sized deltas forming realistic Markdown (paragraphs, headings, lists,
    fenced code)."""
    rng = random.Random(seed)
    parts: list[str] = []
    count = 0
    k = 0
    while count < n:
        k += 1
        if k % 9 == 0:
            block = "## " + " ".join(rng.choice(_WORDS).title() for _ in range(4))
        elif k % 7 == 0:
            block = "\n".join(
                "- " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 12)))
                for _ in range(rng.randint(3, 6))
            )
        elif k % 11 == 0:
            body = "\n".join(
                f"    value_{i} = compute({i}, '{rng.choice(_WORDS)}')  # step {i}"
                for i in range(rng.randint(4, 12))
            )
            block = f"```python\ndef example_{k}():\n{body}\n    return value_0\n```"
        else:
            block = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(40, 120))) + "."
        text = block + "\n\n"
        tokens = _tokenize(text)
        parts.extend(tokens)
        count += len(tokens)
    return parts[:n]


def _tokenize(text: str) -> list[str]:
    # a token is a word with the whitespace that follows it, like a model's deltas
    return re.findall(r"\S+\s*", text)


def line_tokens(n: int) -> list[str]:
    """The demo's ``demo-firehose`` deltas: ``t0 t1 ... t9 t0 ...`` — one endless line."""
    return [f"t{i % 10} " for i in range(n)]


def tokens_for(variant: str, n: int) -> list[str]:
    return line_tokens(n) if variant == "line" else paragraph_tokens(n)


_HEAD = (
    b'{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1741569952,'
    b'"model":"bench","system_fingerprint":"fp_bench","choices":[{"index":0,"delta":'
)


def sse_body(tokens: list[str]) -> list[bytes]:
    """The response body as the writes of a server (a few KB each)."""

    def chunk(delta: bytes, finish: bytes = b"null", extra: bytes = b"") -> bytes:
        tail = b',"logprobs":null,"finish_reason":' + finish + b"}]" + extra + b"}"
        return b"data: " + _HEAD + delta + tail + b"\n\n"

    frames = [chunk(b'{"role":"assistant","content":""}')]
    frames += [chunk(b'{"content":' + json.dumps(t).encode() + b"}") for t in tokens]
    frames.append(chunk(b"{}", b'"stop"'))
    usage = (
        b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1741569952,'
        b'"model":"bench","system_fingerprint":"fp_bench","choices":[],"usage":'
        b'{"prompt_tokens":5,"completion_tokens":%d,"total_tokens":%d}}\n\n'
    )
    frames.append(usage % (len(tokens), len(tokens) + 5))
    frames.append(b"data: [DONE]\n\n")
    writes: list[bytes] = []
    for i in range(0, len(frames), 24):
        writes.append(b"".join(frames[i : i + 24]))
    return writes


class FirehoseServer:
    """OpenAI-compatible SSE on 127.0.0.1: ``/{variant}/{n}/v1/chat/completions`` streams
    ``n`` deltas of ``variant`` with no delay (any request body). Runs in a thread."""

    def __init__(self) -> None:
        self._bodies: dict[tuple[str, int], list[bytes]] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    def base_url(self, variant: str, n: int) -> str:
        if (variant, n) not in self._bodies:
            self._bodies[variant, n] = sse_body(tokens_for(variant, n))
        return f"http://127.0.0.1:{self.port}/{variant}/{n}/v1"

    def __enter__(self) -> FirehoseServer:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop
        )
        self._server = fut.result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length:
                await reader.readexactly(length)
            path = head.split(b" ")[1].decode()
            m = re.match(r"/(\w+)/(\d+)/v1/chat/completions", path)
            body = self._bodies.get((m.group(1), int(m.group(2)))) if m else None
            if body is None:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                return
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                b"cache-control: no-cache\r\nconnection: close\r\n\r\n"
            )
            for part in body:
                writer.write(part)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


# -- cases run in a fresh process -----------------------------------------------------------


def _isolate() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["STREAMSCOPE_HOME"] = tempfile.mkdtemp(prefix="streamscope-bench-")
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"


class StallProbe:
    """A 5 ms repeating timer; lateness of each tick (ms) is a stall of the event loop."""

    def __init__(self, interval_ms: int = 5) -> None:
        from PySide6.QtCore import Qt, QTimer

        self.interval = interval_ms / 1000
        self.late: list[float] = []
        self.ticks: list[tuple[float, float]] = []
        """``(time.perf_counter(), lateness in ms)`` of every tick."""
        self._last = 0.0
        self._timer = QTimer()
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.late = []
        self.ticks = []
        self._last = time.perf_counter()
        self._timer.start()

    def _tick(self) -> None:
        now = time.perf_counter()
        late = max(0.0, (now - self._last - self.interval) * 1000)
        self.late.append(late)
        self.ticks.append((now, late))
        self._last = now

    def stop(self) -> dict[str, Any]:
        self._tick()
        self._timer.stop()
        late = sorted(self.late)
        return {
            "stall_max_ms": late[-1] if late else 0.0,
            "stall_p99_ms": p99(late),
            "ticks": len(late),
            "late_ms": [round(x, 2) for x in late],
        }


def p99(values: list[float]) -> float:
    """The 99th percentile (nearest rank) of ``values``."""
    late = sorted(values)
    return late[min(len(late) - 1, int(len(late) * 0.99))] if late else 0.0


def _qt_app() -> tuple[Any, Any, Any]:
    """QApplication + GC on the Qt thread + a qasync loop, as ``run_app`` sets them up."""
    import qasync
    from PySide6.QtWidgets import QApplication

    from streamscope.ui.shell.gc_guard import MainThreadCollector

    app = QApplication([])
    app.setQuitOnLastWindowClosed(False)
    collector = MainThreadCollector()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    return app, collector, loop


def case_firehose_gui(base_url: str, variant: str, n: int) -> dict[str, Any]:
    _isolate()
    from streamscope.core.net.endpoint_store import EndpointStore
    from streamscope.core.net.endpoints import Endpoint

    store = EndpointStore()
    ep = Endpoint(
        id="bench",
        name="bench",
        base_url=base_url,
        model="bench",
        idle_timeout=60,
        first_byte_timeout=60,
    )
    store.save(store.load().with_endpoint(ep).select("bench"))
    _app, collector, loop = _qt_app()
    from streamscope.ui.shell.app import open_profile
    from streamscope.ui.shell.main_window import MainWindow

    # The real app end to end: the conversation database and the capture store of a profile,
    # so what a turn's end costs (final save, capture written) is in the figures.
    db, captures = open_profile()
    assert db is not None and captures is not None
    window = MainWindow(store=db, captures=captures)
    window.show()
    window.inspector.setCurrentIndex(0)  # Frames
    expected = "".join(tokens_for(variant, n))
    probe = StallProbe()
    out: dict[str, Any] = {}

    async def run() -> None:
        await asyncio.sleep(1.0)  # the window is open for a second before the user sends
        finished: asyncio.Future[float] = loop.create_future()
        rendered: asyncio.Future[float] = loop.create_future()
        runner = window.controller.runner
        runner.turnFinished.connect(
            lambda _t: finished.done() or finished.set_result(time.perf_counter())
        )
        probe.start()
        t0 = time.perf_counter()
        window.composer.editor.setPlainText("go")
        window.composer._on_submit()
        card = window.controller.answer_card(-1)
        card.rendered.connect(lambda: rendered.done() or rendered.set_result(time.perf_counter()))
        t_done = await asyncio.wait_for(finished, 240)
        t_rendered = await asyncio.wait_for(rendered, 240)
        assert not card.is_rendering()
        await asyncio.sleep(0.05)  # a paint of the rendered answer
        out.update(probe.stop())
        turn = runner.last_turn
        assert turn is not None and turn.outcome is not None
        assert turn.outcome.value == "completed", turn.reason
        assert card.text() == expected, (len(card.text()), len(expected))
        out.update(
            completed_s=t_done - t0,
            rendered_s=t_rendered - t0,
            flushes=runner.flushes,
            frames=window.inspector.frames_model.rowCount(),
            render_slice_max_ms=card.last_render_max_slice_ms,
        )
        saved = db.load_conversation(db.list_conversations()[0].id).messages[-1]
        assert saved.text == expected and saved.turn is not None and saved.turn.capture_id
        assert captures.load(saved.turn.capture_id).reads.size > len(expected)
        await window.shutdown()

    loop.run_until_complete(run())
    db.close()
    out["rss_mb"] = peak_rss_mb()
    collector.stop()
    return out


def case_firehose_headless(base_url: str, variant: str, n: int) -> dict[str, Any]:
    import contextlib
    import io

    import streamscope.headless  # noqa: F401  (imports done before the clock starts)
    from streamscope.cli import main

    buf = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf):
        code = main(
            [
                "send",
                "--base-url",
                base_url,
                "--model",
                "bench",
                "--max-tokens",
                str(n),
                "--json",
                "go",
            ]
        )
    seconds = time.perf_counter() - t0
    result = json.loads(buf.getvalue())
    assert code == 0 and result["outcome"] == "completed", result["reason"]
    assert result["text"] == "".join(tokens_for(variant, n))
    return {"seconds": seconds, "rss_mb": peak_rss_mb()}


def case_firehose_sdk(base_url: str, variant: str, n: int) -> dict[str, Any]:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    t0 = time.perf_counter()
    parts = []
    stream = client.chat.completions.create(
        model="bench", max_tokens=n, messages=[{"role": "user", "content": "go"}], stream=True
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    seconds = time.perf_counter() - t0
    assert "".join(parts) == "".join(tokens_for(variant, n))
    return {"seconds": seconds, "rss_mb": peak_rss_mb()}


def build_capture(path: str, frames: int) -> dict[str, Any]:
    """A ``frames``-frame OpenAI capture (reads of 32 frames, 1 ms apart)."""
    from streamscope.core.capture.format import (
        Capture,
        CaptureEnd,
        CaptureRequest,
        CaptureResponse,
        ReadLog,
        write_capture,
    )

    writes = sse_body(line_tokens(frames - 4))  # + role, finish, usage and [DONE] frames
    body = b"".join(writes)
    reads = ReadLog()
    step = 32 * (len(body) // frames)
    t = 0.05
    for i in range(0, len(body), step):
        reads.append(t, body[i : i + step])
        t += 0.001
    request_body = b'{"model":"bench","stream":true,"messages":[]}'
    capture = Capture(
        "openai",
        CaptureRequest("POST", "http://127.0.0.1:1/v1/chat/completions", (), request_body),
        CaptureResponse(200, (("content-type", "text/event-stream"),), 0.01),
        reads,
        CaptureEnd("eof", elapsed=t, outcome="completed"),
    )
    size = write_capture(path, capture)
    return {"raw_bytes": len(body), "file_bytes": size, "reads": len(reads)}


def case_capture(path: str) -> dict[str, Any]:
    _isolate()
    _app, collector, loop = _qt_app()
    from streamscope.ui.shell.main_window import MainWindow

    window = MainWindow()
    window.show()
    window.inspector.setCurrentIndex(0)
    inspector = window.inspector
    probe = StallProbe()
    out: dict[str, Any] = {}

    async def run() -> None:
        await asyncio.sleep(1.0)
        probe.start()
        t0 = time.perf_counter()
        assert window.open_capture(Path(path))  # File > Open capture…, "Instantly"
        await window.opening  # read off the UI thread, then the replay starts
        t_read = time.perf_counter()
        runner = window.controller.runner
        turn = await runner.wait()
        t_replayed = time.perf_counter()
        card = window.chat.cards()[-1]
        while card.is_rendering():  # type: ignore[attr-defined]
            await asyncio.sleep(0.01)
        t_rendered = time.perf_counter()
        inspector.frames_panel.view.scrollToBottom()
        await asyncio.sleep(0.05)
        inspector.frames_panel.select_row(inspector.frames_model.rowCount() - 1)
        await asyncio.sleep(0.2)
        out.update(probe.stop())
        assert turn is not None and turn.outcome is not None
        out.update(
            read_s=t_read - t0,
            replay_s=t_replayed - t_read,
            rendered_s=t_rendered - t_replayed,
            frames=inspector.frames_model.rowCount(),
            outcome=turn.outcome.value,
            flushes=runner.flushes,
        )
        await window.shutdown()

    loop.run_until_complete(run())
    out["rss_mb"] = peak_rss_mb()
    collector.stop()
    return out


# -- cold start -----------------------------------------------------------------------------

_FIRST_PAINT = """
import os, sys, time
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QMainWindow, QWidget
class FirstPaint(QObject):
    first = None
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and isinstance(obj, QWidget):
            now = time.time()
            if self.first is None:
                self.first = now
                sys.stdout.write(f"{now!r}\\n"); sys.stdout.flush()
            if getattr(obj.window(), "built", True):  # the bare window is "built" at once
                sys.stdout.write(f"{now!r}\\n"); sys.stdout.flush(); os._exit(0)
        return False
app = QApplication(sys.argv)
first_paint = FirstPaint()
app.installEventFilter(first_paint)
"""

BARE_WINDOW = (
    _FIRST_PAINT
    + """
window = QMainWindow()
window.resize(1360, 860)
window.show()
app.exec()
"""
)

APP_WINDOW = (
    _FIRST_PAINT
    + """
from streamscope.cli import main
main([])  # `streamscope` with no arguments
"""
)
"""Each prints the time of its first paint, then of the first paint of the whole window
(StreamScope paints its frame first, then builds the panels)."""


@contextmanager
def xvfb() -> Iterator[str]:
    """A private Xvfb server; yields its DISPLAY."""
    exe = shutil.which("Xvfb")
    if exe is None:
        raise RuntimeError("Xvfb is not installed (apt-get install xvfb)")
    read, write = os.pipe()
    proc = subprocess.Popen(
        [exe, "-displayfd", str(write), "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        number = b""
        deadline = time.monotonic() + 10
        while not number.endswith(b"\n") and time.monotonic() < deadline:
            chunk = os.read(read, 16)
            if not chunk:
                break
            number += chunk
        if not number.strip():
            raise RuntimeError("Xvfb did not start")
        yield f":{number.decode().strip()}"
    finally:
        os.close(read)
        proc.terminate()
        proc.wait(10)


def first_paint_seconds(script: str, display: str) -> tuple[float, float]:
    """(first paint, whole window painted), in seconds from process start."""
    home = tempfile.mkdtemp(prefix="streamscope-bench-")
    env = {
        **os.environ,
        "DISPLAY": display,
        "QT_QPA_PLATFORM": "xcb",
        "STREAMSCOPE_HOME": home,
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    }
    start = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env
    )
    shutil.rmtree(home, ignore_errors=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"cold start script failed: {proc.stderr[-2000:]}")
    first, ready = (float(line) - start for line in proc.stdout.split()[-2:])
    return first, ready


# -- the benchmarks -------------------------------------------------------------------------


REPEATS = {10_000: 5, 100_000: 3}
"""Runs per firehose size (one with ``--quick``): times are medians, the stall p99 is over
the runs' pooled timer ticks (a 10k run lasts ~0.2 s: ~40 ticks, whose p99 is their
maximum), the worst stall is the worst of all runs."""


def bench_firehose(quick: bool = False) -> list[Row]:
    rows: list[Row] = []
    sizes = (10_000, 100_000)
    with FirehoseServer() as server:
        for variant in ("paragraphs", "line"):
            completed: dict[int, float] = {}
            for n in sizes:
                url = server.base_url(variant, n)
                runs = 1 if quick else REPEATS[n]
                name = f"firehose {variant} {n // 1000}k"
                gui = [run_case(["firehose-gui", url, variant, str(n)]) for _ in range(runs)]
                headless = [
                    run_case(["firehose-headless", url, variant, str(n)]) for _ in range(runs)
                ]
                s = run_case(["firehose-sdk", url, variant, str(n)])
                g_done = statistics.median(g["completed_s"] for g in gui)
                g_rendered = statistics.median(g["rendered_s"] for g in gui)
                h = statistics.median(x["seconds"] for x in headless)
                completed[n] = g_done
                late = [x for g in gui for x in g["late_ms"]]
                worst = max(g["stall_max_ms"] for g in gui)
                of = f" (median of {runs})" if runs > 1 else ""
                rows += [
                    info(name, f"GUI to completed{of}", f"{g_done:.2f} s"),
                    info(name, "GUI to Markdown rendered", f"{g_rendered:.2f} s"),
                    info(name, f"headless send --json{of}", f"{h:.2f} s"),
                    info(name, "openai SDK", f"{s['seconds']:.2f} s"),
                    check(name, "GUI completed / headless", g_done / h, 1.5, ".2f", "x"),
                    check(name, "stall worst (of all runs)", worst, 50, ".1f", " ms"),
                    check(name, f"stall p99 ({len(late)} ticks)", p99(late), 20, ".1f", " ms"),
                    info(name, "UI flushes", f"{gui[0]['flushes']}"),
                    info(name, "frames rows", f"{gui[0]['frames']}"),
                    info(
                        name,
                        "render slice max",
                        f"{max(g['render_slice_max_ms'] for g in gui):.1f} ms",
                    ),
                    info(
                        name,
                        "peak RSS GUI / headless / SDK",
                        f"{max(g['rss_mb'] for g in gui):.0f} / "
                        f"{max(x['rss_mb'] for x in headless):.0f} / {s['rss_mb']:.0f} MB",
                    ),
                ]
            small, big = sizes
            per_small = completed[small] / small
            per_extra = (completed[big] - completed[small]) / (big - small)
            rows.append(
                check(
                    f"firehose {variant}",
                    "cost/extra delta ÷ cost/delta at 10k",
                    per_extra / per_small,
                    1.2,
                    ".2f",
                    "x",
                )
            )
    return rows


def bench_capture(quick: bool = False) -> list[Row]:
    frames = 100_000 if quick else 1_000_000
    name = f"capture {frames // 1000}k frames"
    with tempfile.TemporaryDirectory(prefix="streamscope-bench-") as tmp:
        path = str(Path(tmp) / "big.sscap")
        built = run_case(["build-capture", path, str(frames)])
        c = run_case(["capture", path])
    raw_mb = built["raw_bytes"] / 1e6
    limit = 2 * built["raw_bytes"] / 2**20 + 150
    return [
        info(name, "raw bytes / file", f"{raw_mb:.0f} MB / {built['file_bytes'] / 1e6:.0f} MB"),
        info(name, "open (read off the UI thread)", f"{c['read_s']:.2f} s"),
        info(name, "instant replay into window", f"{c['replay_s']:.2f} s"),
        info(name, "answer rendered after replay", f"{c['rendered_s']:.2f} s"),
        info(name, "frames rows / flushes", f"{c['frames']} / {c['flushes']}"),
        check(
            name, "stall worst (read, replay, scroll, select)", c["stall_max_ms"], 100, ".1f", " ms"
        ),
        info(name, "stall p99", f"{c['stall_p99_ms']:.1f} ms"),
        check(name, "peak RSS", c["rss_mb"], limit, ".0f", " MB"),
    ]


def bench_coldstart(quick: bool = False) -> list[Row]:
    runs = 3 if quick else 7
    bare: list[float] = []
    ours: list[tuple[float, float]] = []
    with xvfb() as display:
        first_paint_seconds(BARE_WINDOW, display)  # warm the file cache
        first_paint_seconds(APP_WINDOW, display)
        for _ in range(runs):
            bare.append(first_paint_seconds(BARE_WINDOW, display)[0])
            ours.append(first_paint_seconds(APP_WINDOW, display))
    b = min(bare)
    first = min(o[0] for o in ours)
    ready = min(o[1] for o in ours)
    name = f"cold start (Xvfb, best of {runs})"
    return [
        info(name, "bare QMainWindow first paint", f"{b:.3f} s"),
        info(name, "StreamScope first paint (window frame)", f"{first:.3f} s"),
        check(name, "StreamScope / bare", first / b, 1.5, ".2f", "x"),
        info(name, "StreamScope whole window painted", f"{ready:.3f} s ({ready / b:.2f}x bare)"),
    ]


BENCHES = {"firehose": bench_firehose, "capture": bench_capture, "coldstart": bench_coldstart}

CASES = {
    "firehose-gui": lambda a: case_firehose_gui(a[0], a[1], int(a[2])),
    "firehose-headless": lambda a: case_firehose_headless(a[0], a[1], int(a[2])),
    "firehose-sdk": lambda a: case_firehose_sdk(a[0], a[1], int(a[2])),
    "build-capture": lambda a: build_capture(a[0], int(a[1])),
    "capture": lambda a: case_capture(a[0]),
}


def measure(only: list[str] | None = None, quick: bool = False) -> list[Row]:
    rows: list[Row] = []
    for name, bench in BENCHES.items():
        if only and name not in only:
            continue
        rows += bench(quick)
    return rows


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        result = CASES[sys.argv[2]](sys.argv[3:])
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        os._exit(0)  # no teardown: the figures are taken
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(BENCHES))
    parser.add_argument("--quick", action="store_true", help="smaller capture, fewer runs")
    args = parser.parse_args()
    rows = measure(args.only, args.quick)
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
