#!/usr/bin/env python3
"""Write streamscope(1), the man page, from the CLI's own argparse definition.

    python packaging/manpage.py [OUT]       # roff to OUT (default: stdout)

Every subcommand and every option comes from ``streamscope.cli.build_parser()``, so the page
cannot drift from ``--help``; the prose around them (exit status, files, environment) is
here. Run with the project's venv (the parser loads the dialect registry). The .deb installs
the result gzipped as /usr/share/man/man1/streamscope.1.gz (packaging/build.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "app"))

from streamscope import __version__  # noqa: E402
from streamscope.cli import build_parser  # noqa: E402

EXIT_STATUS = (
    ("0", "the turn completed (or the command succeeded)"),
    ("2", "usage error"),
    ("3", "the turn was truncated: the stream ended before the server's terminal signal"),
    ("4", "the turn ended in an error"),
    ("130", "cancelled (Ctrl+C)"),
)


def esc(text: str) -> str:
    """Text for roff: backslashes escaped, hyphens as minus signs, no leading control char."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + out if out.startswith((".", "'")) else out


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(map(str, action.choices)) + "}"
    return action.dest.upper()


def _option_head(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"\\fI{esc(_metavar(action))}\\fR"
    names = ", ".join(f"\\fB{esc(s)}\\fR" for s in action.option_strings)
    if action.nargs == 0:
        return names
    return f"{names} \\fI{esc(_metavar(action))}\\fR"


def _option_help(action: argparse.Action) -> str:
    text = action.help or ""
    if action.choices is not None and action.metavar is not None:
        text = (text + "; " if text else "") + "one of " + ", ".join(map(str, action.choices))
    if action.required and action.option_strings:
        text = (text + " " if text else "") + "(required)"
    default = action.default
    shows_default = action.option_strings and action.nargs != 0 and "default" not in text
    if shows_default and default not in (None, argparse.SUPPRESS):
        text = (text + " " if text else "") + f"(default: {default})"
    return esc(text.strip()) or "\\&"


def _options(parser: argparse.ArgumentParser) -> list[str]:
    lines: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        lines += [".TP", _option_head(action), _option_help(action)]
    return lines


def subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each subcommand's name -> (its one-line help, its parser), in definition order."""
    out: dict[str, tuple[str, argparse.ArgumentParser]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                out[name] = (helps.get(name, ""), sub)
    return out


def _usage(parser: argparse.ArgumentParser) -> list[str]:
    """The usage lines as argparse wraps them (72 columns: within 80 once indented)."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "72"
    try:
        text = parser.format_usage().removeprefix("usage: ")
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    first, *rest = text.rstrip().splitlines()
    return [esc(first), *("    " + esc(line.strip()) for line in rest)]


def render() -> str:
    parser = build_parser()
    summary = (parser.description or "").split(". ")[0].rstrip(".")
    summary = summary[0].lower() + summary[1:]
    lines = [
        '.TH STREAMSCOPE 1 "" "streamscope ' + __version__ + '" "User Commands"',
        ".SH NAME",
        "streamscope \\- " + esc(summary.removeprefix("a ")),
        ".SH SYNOPSIS",
        ".B streamscope",
        "[\\fB\\-\\-self\\-test\\fR | \\fB\\-\\-version\\fR]",
        ".br",
        ".B streamscope",
        "\\fIFILE\\fR.sscap | \\fIBUNDLE\\fR.zip",
        ".br",
        ".B streamscope",
        "\\fICOMMAND\\fR [\\fIoptions\\fR]",
        ".SH DESCRIPTION",
        esc(parser.description or ""),
        ".PP",
        "With a capture (\\fI.sscap\\fR) or a repro bundle (\\fI.zip\\fR) as its only argument, "
        "StreamScope opens the window and replays it; if StreamScope is already running for "
        "the profile, the file is handed to that window instead.",
        ".PP",
        "The commands below run without a window and never load Qt.",
        ".SH OPTIONS",
        *_options(parser),
        ".TP",
        "\\fB\\-h\\fR, \\fB\\-\\-help\\fR",
        "show the help (also after a command) and exit",
        ".SH COMMANDS",
    ]
    for name, (help_text, sub) in subcommands(parser).items():
        lines += [
            f'.SS "{esc(name)}"',
            esc(help_text[:1].upper() + help_text[1:]) + ".",
            ".PP",
            ".nf",
            *_usage(sub),
            ".fi",
            *_options(sub),
        ]
    lines += [".SH EXIT STATUS"]
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", esc(meaning)]
    lines += [
        ".SH ENVIRONMENT",
        ".TP",
        "\\fBSTREAMSCOPE_HOME\\fR",
        "a folder for the whole profile (database, captures, logs, settings) instead of the "
        "per-user data folder",
        ".SH FILES",
        ".TP",
        "\\fI~/.local/share/StreamScope\\fR",
        "the profile: conversations (SQLite), captures, logs and settings",
        ".SH SEE ALSO",
        "\\fBcurl\\fR(1)",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    text = render()
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
