"""`streamscope send` and `streamscope replay`: the pipeline without a window.

Without ``--json`` the answer streams to stdout as it arrives and a one-line outcome summary
goes to stderr. With ``--json`` one object goes to stdout (see :func:`turn_to_json`).
``--raw`` prints every frame with its time offset (to stderr with ``--json``, else stdout).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from streamscope.core.net.client import StreamClient, StreamTimeouts, TurnObserver
from streamscope.core.redact import Scrubber
from streamscope.core.turn.model import Turn, turn_to_json
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import ParsedFrame, PipelineUpdate, StreamPipeline
from streamscope.core.wire.conversation import Conversation, Message, ToolDefinition
from streamscope.core.wire.dialects import get_dialect
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.core.wire.events import ReasoningDelta, TextDelta

if TYPE_CHECKING:
    from streamscope.core.capture.format import Capture
    from streamscope.core.capture.har import HarExchange, HarSkip

EXIT_CODES = {
    Outcome.COMPLETED: 0,
    Outcome.TRUNCATED: 3,
    Outcome.ERROR: 4,
    Outcome.CANCELLED: 130,
}
EXIT_USAGE = 2
REPLAY_READ = 64 * 1024


class UsageError(Exception):
    """Bad command-line input: reported on stderr with exit code 2."""


def run(args: argparse.Namespace) -> int:
    """Entry point for the ``send`` and ``replay`` subcommands."""
    try:
        if args.command == "send":
            return _send(args)
        return _replay(args)
    except UsageError as exc:
        print(f"streamscope {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


class _Printer(TurnObserver):
    """Streams text (or frames) as they arrive; remembers the finished turn."""

    def __init__(self, *, as_json: bool, raw: bool, t0: float | None = None) -> None:
        self.as_json = as_json
        self.raw = raw
        self.t0 = t0
        self.turn: Turn | None = None
        self._in_reasoning = False
        self.out: TextIO = sys.stdout

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        self.t0 = t

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        if self.raw:
            stream = sys.stderr if self.as_json else sys.stdout
            for parsed in update.frames:
                print_frame(parsed, t - (self.t0 or t), stream)
            stream.flush()
            return
        if self.as_json:
            return
        for event in update.events:
            match event:
                case TextDelta(text):
                    if self._in_reasoning:
                        sys.stderr.write("\n")  # reasoning (stderr) is over
                        self._in_reasoning = False
                    self.out.write(text)
                case ReasoningDelta(text):
                    self._in_reasoning = True
                    sys.stderr.write(text)
        self.out.flush()

    def finished(self, turn: Turn) -> None:
        if self._in_reasoning:
            sys.stderr.write("\n")
            self._in_reasoning = False
        self.turn = turn


def print_frame(parsed: ParsedFrame, offset_s: float, stream: TextIO) -> None:
    """One line per frame: time offset, size, then the frame text (escaped)."""
    frame = parsed.frame
    text = frame.raw.decode("utf-8", "replace").rstrip("\r\n")
    escaped = text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n")
    flag = "" if frame.complete else " (incomplete)"
    stream.write(f"{offset_s * 1000:9.1f} ms {len(frame.raw):6d} B{flag}  {escaped}\n")


def _report(turn: Turn, *, as_json: bool, streamed_text: bool) -> int:
    if as_json:
        sys.stdout.write(json.dumps(turn_to_json(turn), ensure_ascii=False) + "\n")
    else:
        if streamed_text and turn.text and not turn.text.endswith("\n"):
            sys.stdout.write("\n")
        for call in turn.tool_calls:
            sys.stdout.write(f"[tool call] {call.name}({call.arguments})\n")
        sys.stdout.flush()
        print(turn.summary(), file=sys.stderr)
    sys.stdout.flush()
    assert turn.outcome is not None
    return EXIT_CODES[turn.outcome]


# -- send ---------------------------------------------------------------------------------


def _load_tools(path: str | None) -> list[ToolDefinition]:
    if not path:
        return []
    try:
        data: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--tools {path}: {exc}") from None
    if isinstance(data, dict):
        data = data.get("tools", [data])
    if not isinstance(data, list):
        raise UsageError(f"--tools {path}: expected a JSON list of function definitions")
    tools = []
    for item in data:
        fn = item.get("function", item) if isinstance(item, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise UsageError(f"--tools {path}: every tool needs a name: {item!r}")
        tools.append(
            ToolDefinition(
                name=fn["name"],
                description=str(fn.get("description", "")),
                parameters=fn.get("parameters") or {"type": "object", "properties": {}},
            )
        )
    return tools


def _send(args: argparse.Namespace) -> int:
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise UsageError(f"environment variable {args.api_key_env} is not set or empty")
    conv = Conversation(
        messages=[Message("user", args.prompt)],
        system=args.system,
        tools=_load_tools(args.tools),
        max_tokens=args.max_tokens,
    )
    spec = get_dialect(args.dialect).build_request(
        conv, base_url=args.base_url, model=args.model, api_key=api_key
    )
    timeouts = StreamTimeouts(first_byte=args.first_byte_timeout, idle=args.idle_timeout)
    printer = _Printer(as_json=args.json, raw=args.raw)

    async def main() -> None:
        client = StreamClient()
        try:
            await client.run_turn(
                spec,
                dialect=args.dialect,
                timeouts=timeouts,
                observer=printer,
                keep_frames=True,  # the capture is always kept, as in the app
            )
        finally:
            await client.aclose()

    with contextlib.suppress(KeyboardInterrupt):  # the client recorded a cancelled turn
        asyncio.run(main())
    if printer.turn is None:  # interrupted before the client started
        printer.turn = StreamPipeline(args.dialect).close(StreamEnd("cancelled", elapsed=0.0), 0)
    # What is printed at the end may be kept (scripts save it): the key is masked in it even
    # where the server echoed it (the streamed text went out live, as the window shows it).
    scrubbed = printer.turn.scrubbed(Scrubber.for_request(spec.headers, spec.url))
    return _report(scrubbed, as_json=args.json, streamed_text=not args.raw)


# -- replay -------------------------------------------------------------------------------


def _read_input(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


def replay_body(body: bytes, dialect: str, *, observer: _Printer | None = None) -> Turn:
    """Run a recorded response body through the pipeline (no timing: offsets are 0)."""
    pipeline = StreamPipeline(dialect, keep_frames=bool(observer and observer.raw))
    for start in range(0, len(body), REPLAY_READ):
        update = pipeline.feed(body[start : start + REPLAY_READ], 0.0)
        if observer is not None:
            observer.progressed(update, 0.0)
        if update.protocol_error:
            return pipeline.close(StreamEnd("protocol_error", detail=update.protocol_error), 0.0)
    tail = pipeline.flush(0.0)
    if observer is not None:
        observer.progressed(tail, 0.0)
    return pipeline.close(StreamEnd("eof"), 0.0)


@dataclass(frozen=True, slots=True)
class _HarInput:
    """A HAR file's LLM exchanges (as captures) and the entries that are not."""

    total: int
    exchanges: list[HarExchange]
    skipped: list[HarSkip]


def _har_input(data: bytes) -> _HarInput:
    from streamscope.core.capture.har import har_exchanges, read_har

    log = read_har(data)
    exchanges, skipped = har_exchanges(log)
    return _HarInput(len(log["entries"]), exchanges, skipped)


def _read_replay_input(path: str) -> bytes | Capture | _HarInput:
    """A raw body, the capture in a ``.sscap`` file or repro bundle, or a HAR file's
    exchanges (by content; a HAR file also by its ``.har`` name)."""
    from streamscope.core.capture.bundle import is_bundle, read_repro_bundle
    from streamscope.core.capture.format import is_capture, read_capture
    from streamscope.core.capture.har import HAR_SUFFIX, is_har

    try:
        if path == "-":
            data = sys.stdin.buffer.read()
            if is_har(data[:REPLAY_READ]):
                return _har_input(data)
            if is_bundle(data[:4]):
                return read_repro_bundle(io.BytesIO(data))
            if is_capture(data[:REPLAY_READ]):
                return read_capture(io.BytesIO(data))
            return data
        with open(path, "rb") as fp:
            head = fp.read(REPLAY_READ)
        if is_bundle(head):
            return read_repro_bundle(path)
        if is_capture(head):
            return read_capture(path)
        if path.lower().endswith(HAR_SUFFIX) or is_har(head):
            return _har_input(Path(path).read_bytes())
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # CaptureError, a damaged bundle
        raise UsageError(f"{path}: {exc}") from None
    return _read_input(path)


def _replay(args: argparse.Namespace) -> int:
    source = _read_replay_input(args.file)
    entry = getattr(args, "entry", None)
    if isinstance(source, _HarInput):
        if entry is None:
            return _replay_har(source, args)
        source = _har_entry(source, entry)
    elif entry is not None:
        raise UsageError("--entry applies to a HAR file only")
    printer = _Printer(as_json=args.json, raw=args.raw, t0=0.0)
    if isinstance(source, bytes):
        turn = replay_body(source, args.dialect or "auto", observer=printer)
    else:
        from streamscope.core.capture.replay import replay_capture

        turn = asyncio.run(
            replay_capture(source, observer=printer, dialect=args.dialect, keep_frames=args.raw)
        )
    return _report(turn, as_json=args.json, streamed_text=not args.raw)


def _har_entry(har: _HarInput, n: int) -> Capture:
    """Entry ``n`` (1-based, as in the file) of a HAR file, when it is an LLM exchange."""
    for ex in har.exchanges:
        if ex.entry == n:
            return ex.capture
    for skip in har.skipped:
        if skip.entry == n:
            raise UsageError(f"entry {n} is not replayed: {skip.reason}")
    raise UsageError(f"no entry {n} (the HAR file has {har.total})")


def _replay_har(har: _HarInput, args: argparse.Namespace) -> int:
    """Every LLM exchange of a HAR file: one line (or JSON object) each on stdout."""
    from streamscope.core.capture.replay import replay_capture

    if not har.exchanges:
        raise UsageError(
            f"{args.file}: no LLM exchange in the HAR file ({har.total} entries, none "
            "a POST to a dialect's path or a stream)"
        )
    worst = 0
    for ex in har.exchanges:
        request = ex.capture.request
        method, url = (request.method, request.url) if request is not None else ("", "")
        if args.raw:
            stream = sys.stderr if args.json else sys.stdout
            stream.write(f"# entry {ex.entry}: {method} {url}\n")
        printer = _Printer(as_json=True, raw=args.raw, t0=0.0)
        turn = asyncio.run(
            replay_capture(ex.capture, observer=printer, dialect=args.dialect, keep_frames=args.raw)
        )
        if args.json:
            obj = {"entry": ex.entry, "method": method, "url": url, **turn_to_json(turn)}
            sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
        elif not args.raw:
            sys.stdout.write(f"entry {ex.entry}: {method} {url}: {turn.summary()}\n")
        sys.stdout.flush()
        assert turn.outcome is not None
        code = EXIT_CODES[turn.outcome]
        worst = code if _SEVERITY.index(code) > _SEVERITY.index(worst) else worst
    print(
        f"{len(har.exchanges)} LLM exchange(s) replayed, {len(har.skipped)} other "
        f"entr{'y' if len(har.skipped) == 1 else 'ies'} skipped",
        file=sys.stderr,
    )
    return worst


_SEVERITY = (0, 130, 3, 4)
"""Exit codes from least to most severe: a HAR replay exits with its worst exchange's."""
