"""`streamscope tap`: the recording reverse proxy in the foreground, until Ctrl-C (exit 0).

stderr says where it listens, the base URL to give a client and the SDKs' environment
lines; stdout gets one line per finished exchange — with ``--json`` one object::

    {"id", "method", "path", "status", "outcome", "reason", "dialect", "frames", "bytes",
     "ttft_ms", "duration_ms", "capture", "faults"}

(``faults``: what ``--fault`` did to that exchange, ``[]`` without.) With ``--fault``,
stopping prints how the clients reacted (:mod:`streamscope.faults_cli`).

Exit codes: 0 stopped by Ctrl-C (or SIGTERM), 1 cannot listen, 2 usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from urllib.parse import urlsplit

from streamscope.core.net.options import TLSOptions
from streamscope.core.tap.history import tap_capture_store
from streamscope.core.tap.proxy import ExchangeResult, TapExchange
from streamscope.core.tap.server import TapServer, is_loopback, parse_listen
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.wire.sizes import plural
from streamscope.faults_cli import reaction_lines

EXIT_USAGE = 2
EXIT_CANNOT_LISTEN = 1


class _Printer:
    """One line per finished exchange on stdout (exchanges end on the tap's loop thread)."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self._lock = threading.Lock()

    def exchange_started(self, exchange: TapExchange) -> TurnObserver | None:
        return None

    def exchange_finished(self, result: ExchangeResult) -> None:
        if self.as_json:
            line = json.dumps(result.to_json(), ensure_ascii=False)
        else:
            r = result
            ttft = f" · TTFT {r.ttft_ms:.0f} ms" if r.ttft_ms is not None else ""
            line = (
                f"#{r.exchange.id} {r.exchange.method} {r.exchange.path} → {r.status} "
                f"{r.outcome}: {r.reason} · {plural(r.frames, 'frame')} · {r.bytes} B{ttft} · "
                f"{r.duration_ms:.0f} ms · {r.exchange.capture}"
            )
        self.write(line)

    def write(self, line: str) -> None:
        with self._lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


def _usage(message: str) -> int:
    print(f"streamscope tap: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_tap(args: argparse.Namespace) -> int:
    parts = urlsplit(args.upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return _usage(f"--upstream must be an http:// or https:// URL, not {args.upstream!r}")
    try:
        host, port = parse_listen(args.listen)
    except ValueError as exc:
        return _usage(f"--listen: {exc}")
    if not is_loopback(host):
        if not args.allow_remote:
            return _usage(
                f"--listen {args.listen}: other machines could reach it and send requests "
                "with your upstream; add --allow-remote if you mean it"
            )
        print(
            f"streamscope tap: WARNING: listening on {host}, reachable from other machines: "
            "anyone who can reach it can use the upstream and see what is recorded",
            file=sys.stderr,
        )
    tls = TLSOptions(verify=not args.insecure, ca_bundle=args.ca_file)
    captures = tap_capture_store()  # (the window's Tapped list shows them as earlier ones)
    printer = _Printer(args.json)
    tap = TapServer(
        args.upstream,
        host=host,
        port=port,
        dialect=args.dialect,
        tls=tls,
        captures=captures,
        listener=printer,
        faults=args.fault,
    )
    try:
        tap.bind()
    except OSError as exc:  # (a ListenError: in plain words)
        print(f"streamscope tap: cannot listen on {args.listen}: {exc}", file=sys.stderr)
        return EXIT_CANNOT_LISTEN
    lines = [
        f"streamscope tap: listening on {tap.root_url} → {tap.upstream}",
        f"  base URL: {tap.base_url}",
        *(f"  {line}" for line in tap.env_lines()),
        f"  captures: {captures.directory}",
        *([f"  faults: {args.fault}"] if args.fault is not None else []),
        "Press Ctrl-C to stop.",
    ]
    with contextlib.suppress(KeyboardInterrupt):  # (before uvicorn's handler is in place)
        tap.serve_forever(lambda: print("\n".join(lines), file=sys.stderr, flush=True))
    print("streamscope tap: stopped", file=sys.stderr, flush=True)
    if args.fault is not None:
        for line in reaction_lines(tap.reactions(), as_json=args.json):
            printer.write(line)
    return 0
