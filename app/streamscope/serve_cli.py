"""`streamscope serve`: recorded exchanges answered again in the foreground, until Ctrl-C
or SIGTERM (exit 0).

stdout's first line says where to point a client: the base URL alone, or with ``--json`` one
object ``{"base_url", "root_url", "recordings"}`` (so that stdout stays JSON Lines). Then one
line per finished exchange — with ``--json`` one object with the tap's keys plus ``served``::

    {"id", "method", "path", "status", "outcome", "reason", "dialect", "frames", "bytes",
     "ttft_ms", "duration_ms", "capture", "served"}

(``capture`` is always null: serve records nothing; ``served`` is the file the answer came
from, ``FILE#N`` for a HAR entry, null when no recording matched; ``faults`` the faults
``--fault`` scheduled for that request, applied or not, ``[]`` without ``--fault``.) stderr
says what was loaded, where it listens and the SDKs' environment lines.

With ``--fault``, stopping prints how the clients reacted: with ``--json`` one last line
``{"reactions": {"exchanges": [...], "summary": {...}}}`` (see
:func:`streamscope.core.faults.client_reactions`), else one line per faulted exchange and a
summary line.

Exit codes: 0 stopped by Ctrl-C (or SIGTERM), 1 cannot listen, 2 usage error (a path that
cannot be served — missing, damaged, not a capture — named with what is wrong).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from typing import TYPE_CHECKING

from streamscope.core.wire.sizes import plural
from streamscope.faults_cli import FAULT_HELP, fault_spec, reaction_lines

if TYPE_CHECKING:
    from streamscope.core.serve import ServedExchange

EXIT_USAGE = 2
EXIT_CANNOT_LISTEN = 1


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``serve``'s options (the man page and ``--help`` come from here)."""
    serve = sub.add_parser(
        "serve",
        help="answer requests with recorded exchanges: the bytes, the reads and their timing",
        description="Answer each request with a recorded exchange: its status, headers and "
        "body, each recorded read written at its recorded offset, a cut as a cut, a stall as a "
        "stall. stdout's first line is the base URL (with --json, an object {base_url, "
        "root_url, recordings}); then one line per exchange. A request with no recording "
        "gets HTTP 404 with a JSON error. Exit codes: 0 stopped, 1 cannot listen, 2 usage "
        "error.",
    )
    serve.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help=".sscap capture, a folder of them, repro bundle .zip or HAR file",
    )
    serve.add_argument(
        "--listen", default="127.0.0.1:8701", metavar="HOST:PORT", help="port 0: a free one"
    )
    pace = serve.add_mutually_exclusive_group()
    pace.add_argument(
        "--speed",
        type=_speed,
        default=1.0,
        metavar="X",
        help="play the recorded timing X times faster (default 1: as recorded)",
    )
    pace.add_argument("--fast", action="store_true", help="no waits: every read written at once")
    serve.add_argument(
        "--match",
        choices=("order", "request"),
        default="order",
        help="order: each path's recordings in turn; request: the recording whose request "
        "body is this one (ignoring stream_options, user, metadata, safety_identifier, "
        "prompt_cache_key)",
    )
    serve.add_argument(
        "--loop", action="store_true", help="start again from the first when all were served"
    )
    serve.add_argument("--fault", type=fault_spec, metavar="SPEC", help=FAULT_HELP)
    serve.add_argument("--json", action="store_true", help="one JSON object per exchange")


class _Printer:
    """One line per finished exchange on stdout (told on the server's thread)."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._lock = threading.Lock()

    def __call__(self, ex: ServedExchange) -> None:
        if self.as_json:
            line = json.dumps(ex.to_json(), ensure_ascii=False)
        else:
            ttft = f" · TTFT {ex.ttft_ms:.0f} ms" if ex.ttft_ms is not None else ""
            line = (
                f"#{ex.id} {ex.method} {ex.path} → {ex.status} {ex.outcome}: {ex.reason} · "
                f"{plural(ex.frames, 'frame')} · {ex.bytes} B{ttft} · {ex.duration_ms:.0f} ms · "
                f"served {ex.served or 'nothing'}"
            )
        self.write(line)

    def write(self, line: str) -> None:
        with self._lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


def _usage(message: str) -> int:
    print(f"streamscope serve: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_serve(args: argparse.Namespace) -> int:
    # (imported here: the parser is built for --help and --version without them)
    from streamscope.core.serve import ServeInputError, ServeServer
    from streamscope.core.tap.server import env_lines, is_loopback, parse_listen

    try:
        host, port = parse_listen(args.listen)
    except ValueError as exc:
        return _usage(f"--listen: {exc}")
    printer = _Printer(args.json)
    try:
        server = ServeServer(
            args.paths,
            host=host,
            port=port,
            speed=None if args.fast else args.speed,
            match=args.match,
            loop=args.loop,
            faults=args.fault,
            listener=printer,
        )
    except ServeInputError as exc:
        return _usage(str(exc))
    try:
        server.bind()
    except OSError as exc:
        print(f"streamscope serve: cannot listen on {args.listen}: {exc}", file=sys.stderr)
        return EXIT_CANNOT_LISTEN
    if not is_loopback(host):
        print(
            f"streamscope serve: WARNING: listening on {host}, reachable from other machines: "
            "anyone who can reach it can read the recorded conversations",
            file=sys.stderr,
        )
    n = len(server.recordings)
    if args.json:
        first = {"base_url": server.base_url, "root_url": server.root_url, "recordings": n}
        printer.write(json.dumps(first))
    else:
        printer.write(server.base_url)
    pace = "no waits (--fast)" if args.fast else f"{args.speed:g}× the recorded timing"
    lines = [
        f"streamscope serve: listening on {server.root_url}: {n} recorded "
        f"exchange{'s' if n != 1 else ''}, matched by {args.match}"
        f"{', looping' if args.loop else ''}, {pace}",
        *([f"  faults: {args.fault}"] if args.fault is not None else []),
        f"  base URL: {server.base_url}",
        *(f"  {line}" for line in env_lines(server.root_url, server.base_url)),
        "Press Ctrl-C to stop.",
    ]
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(lambda: print("\n".join(lines), file=sys.stderr, flush=True))
    print("streamscope serve: stopped", file=sys.stderr, flush=True)
    if args.fault is not None:
        for line in reaction_lines(server.reactions(), as_json=args.json):
            printer.write(line)
    return 0
