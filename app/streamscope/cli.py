"""The `streamscope` command line.

No arguments opens the main window. Subcommands run headless and never import Qt:

    streamscope send ...         one streamed turn against an endpoint
    streamscope replay FILE ...  a recorded body (or capture) through the same pipeline
    streamscope lint FILE ...    a recorded stream checked against its dialect's rules
    streamscope demo-server ...  the embedded demo endpoint, standalone
    streamscope tap ...          a recording reverse proxy: another app's streams as turns
    streamscope serve PATH...    recorded exchanges answered again, byte-exact, with their timing
    streamscope bench ...        load an endpoint: TTFT, ITL, E2E and outcomes per step
    streamscope FILE.sscap       open the window and replay a capture (or repro bundle .zip)
    streamscope export ...       a saved conversation as Markdown or JSON (or HAR: --har)

Exit codes: 0 completed, 3 truncated, 4 error, 130 cancelled, 2 usage error (``lint``: 0 no
errors, 1 errors, 2 usage error; ``tap``/``serve``: 0 stopped, 1 cannot listen, 2 usage error).
Heavy modules are imported inside the handlers so `--version` and `--help` stay instant
(the parser loads only the dialect registry, for the `--dialect` choices).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from streamscope import __version__


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from streamscope.core.wire.dialects import dialect_names  # the registry, as it is now

    parser = argparse.ArgumentParser(
        prog="streamscope",
        description="A desktop chat client for LLM endpoints that shows the stream itself. "
        "Without a subcommand, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"streamscope {__version__}")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="check this installation (window, fonts, one demo turn), print one line, exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    send = sub.add_parser("send", help="send one streamed turn and print the result")
    send.add_argument("prompt", metavar="PROMPT")
    send.add_argument("--base-url", required=True, help="API base URL including its version prefix")
    send.add_argument("--model", required=True)
    send.add_argument("--dialect", choices=dialect_names(), default="openai")
    send.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the key")
    send.add_argument("--system", metavar="S", help="system prompt")
    send.add_argument("--max-tokens", type=int, metavar="N")
    send.add_argument("--tools", metavar="FILE.json", help="JSON list of function definitions")
    send.add_argument("--first-byte-timeout", type=_positive_float, metavar="S", default=300.0)
    send.add_argument("--idle-timeout", type=_positive_float, metavar="S", default=300.0)
    send.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    send.add_argument("--raw", action="store_true", help="print every frame with its time offset")

    replay = sub.add_parser("replay", help="run a recorded stream through the pipeline")
    replay.add_argument(
        "file",
        metavar="FILE",
        help="raw response body, .sscap capture, repro bundle .zip or HAR file; - for stdin",
    )
    replay.add_argument(
        "--dialect",
        choices=dialect_names(with_auto=True),
        default=None,
        help="default: the capture's own dialect, else auto",
    )
    replay.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    replay.add_argument("--raw", action="store_true", help="print every frame with its offset")
    replay.add_argument(
        "--entry",
        type=int,
        metavar="N",
        help="with a HAR file: replay entry N only (1-based, as in the file); default: every "
        "LLM exchange in it, one line each",
    )

    lint = sub.add_parser("lint", help="check a recorded stream against its dialect's rules")
    lint.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        help="raw response body, .sscap capture, repro bundle .zip or HAR file; - for stdin",
    )
    lint.add_argument(
        "--dialect",
        choices=dialect_names(with_auto=True),
        default=None,
        help="default: the capture's own dialect, else auto",
    )
    lint.add_argument(
        "--entry",
        type=int,
        metavar="N",
        help="with a HAR file: lint entry N only (1-based, as in the file); default: every "
        "LLM exchange in it",
    )
    lint_out = lint.add_mutually_exclusive_group()
    lint_out.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    lint_out.add_argument("--sarif", action="store_true", help="print SARIF 2.1.0 on stdout")
    lint.add_argument("--rules", action="store_true", help="list every rule and exit")

    export = sub.add_parser("export", help="write a saved conversation as Markdown or JSON")
    which = export.add_mutually_exclusive_group()
    which.add_argument("--conversation", type=int, metavar="ID", help="conversation id")
    which.add_argument(
        "--last", action="store_true", help="the most recently updated one (the default)"
    )
    export.add_argument("--format", choices=("md", "json"), default="md")
    export.add_argument(
        "--har",
        action="store_true",
        help="write HAR 1.2 instead: the conversation's answers that have a capture, "
        "or the --capture ones",
    )
    export.add_argument(
        "--capture",
        action="append",
        metavar="FILE|ID",
        help="with --har: a .sscap file or a stored capture's id (repeatable)",
    )
    export.add_argument("-o", "--output", metavar="FILE", help="default: stdout")

    tap = sub.add_parser(
        "tap", help="forward another app's requests to an endpoint and record every exchange"
    )
    tap.add_argument("--upstream", required=True, metavar="URL", help="the endpoint to forward to")
    tap.add_argument("--listen", default="127.0.0.1:8700", metavar="HOST:PORT")
    tap.add_argument("--dialect", choices=dialect_names(with_auto=True), default="auto")
    tap.add_argument("--json", action="store_true", help="one JSON object per finished exchange")
    tap.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --listen on an interface other machines can reach (prints a warning)",
    )
    tap.add_argument("--ca-file", metavar="FILE", help="extra CA certificates for the upstream")
    tap.add_argument("--insecure", action="store_true", help="do not verify upstream's TLS")
    from streamscope.faults_cli import FAULT_HELP, fault_spec

    tap.add_argument("--fault", type=fault_spec, metavar="SPEC", help=FAULT_HELP)

    from streamscope.serve_cli import add_parser as add_serve

    add_serve(sub)

    from streamscope.bench_cli import add_parser as add_bench

    add_bench(sub)

    demo = sub.add_parser("demo-server", help="run the built-in demo endpoint")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8765)
    demo.add_argument("--speed", type=_positive_float, default=1.0, help="pacing multiplier")
    return parser


CAPTURE_SUFFIXES = (".sscap", ".zip")


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["--stream-worker"]:  # the window's stream worker process (internal)
        from streamscope.core.net.worker import worker_main

        return worker_main(given[1:])
    if given[:1] == ["--bench-runner"]:  # a bench's load process (internal)
        from streamscope.core.bench.runner_process import runner_main

        return runner_main(given[1:])
    if given[:1] == ["--bench-session"]:  # the Bench window's measuring process (internal)
        from streamscope.core.bench.background import session_main

        return session_main(given[1:])
    if given[:1] == ["--tap-forwarder"]:  # the tap's forwarding process (internal)
        from streamscope.core.tap.forward_child import forwarder_main

        return forwarder_main(given[1:])
    if given[:1] == ["--tap-recorder"]:  # the window's tap's recording process (internal)
        from streamscope.core.tap.recorder_child import recorder_main

        return recorder_main(given[1:])
    if len(given) == 1 and given[0].lower().endswith(CAPTURE_SUFFIXES):
        # `streamscope turn.sscap` (a file manager's "Open with"): the window replays it
        from pathlib import Path

        from streamscope.ui.shell.app import run_app

        return run_app(open_path=Path(given[0]))
    if not given:  # the window: it paints before the parser's imports would load
        from streamscope.ui.shell.app import run_app

        return run_app()
    args = build_parser().parse_args(argv)
    if args.self_test:
        from streamscope import selftest

        return selftest.run()
    if args.command is None:
        from streamscope.ui.shell.app import run_app

        return run_app()
    if args.command in ("send", "replay"):
        from streamscope import headless

        return headless.run(args)
    if args.command == "lint":
        from streamscope import lint

        return lint.run(args)
    if args.command == "export" and (args.har or args.capture):
        from streamscope.core.store.har_export import run_har_export

        return run_har_export(args)
    if args.command == "export":
        from streamscope.core.store.export import run_export

        return run_export(args)
    if args.command == "tap":
        from streamscope.tap_cli import run_tap

        return run_tap(args)
    if args.command == "serve":
        from streamscope.serve_cli import run_serve

        return run_serve(args)
    if args.command == "bench":
        from streamscope import bench_cli

        return bench_cli.run(args)
    if args.command == "demo-server":
        from streamscope.demo.server import serve_forever

        return serve_forever(host=args.host, port=args.port, speed=args.speed)
    raise AssertionError(args.command)  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
