"""A pasted ``curl`` command line read back into a request: what browsers' "Copy as cURL"
writes (Chrome and Edge for bash and for cmd, Firefox for POSIX and for Windows, Safari), what
people type, and what :func:`~streamscope.core.net.curl.to_curl` writes.

    parse_curl(text)   # ParsedRequest("POST", "https://…", [("Authorization", …)], b"{…}")

Quoting is the shell's (:mod:`streamscope.core.net.shell_words`). Understood: ``-X``,
``-H`` (``name;`` is an empty header), ``-d/--data/--data-raw/--data-binary/--data-ascii``
(repeated: joined with ``&``), ``--data-urlencode``, ``--json``, ``-u``, ``-A``, ``-b``
(a cookie string), ``-I``, ``--url`` or a bare URL (curl's ``\\[`` glob escapes undone unless
``-g``); a body read from standard input (``@-``) comes from a here-document, and through
``head -c``, ``cat``, ``printf %s`` and ``base64 -d`` piped into curl. Harmless options
(``-s``, ``-N``, ``--compressed``, ``-k`` …) are ignored. Shell variables stay as written.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

from streamscope.core.net.shell_words import Command, ShellSplitError, split_command

__all__ = ["CurlParseError", "ParsedRequest", "parse_curl"]


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """A request read from a command line. ``headers`` keep their order and spelling."""

    method: str
    url: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes | None = None

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


class CurlParseError(ValueError):
    """The command line is not a curl command this parser understands."""


_NO_ARG_FLAGS = frozenset(
    {
        "-s", "--silent", "-S", "--show-error", "-N", "--no-buffer", "-v", "--verbose",
        "--compressed", "-L", "--location", "-k", "--insecure", "-i", "--include", "-f",
        "--fail", "--fail-with-body", "--http1.1", "--http2", "--http2-prior-knowledge", "-#",
        "--progress-bar", "--raw", "--no-progress-meter", "-q",
    }
)  # fmt: skip
_ARG_FLAGS_IGNORED = frozenset(
    {
        "-o", "--output", "-m", "--max-time", "--connect-timeout", "--retry", "-w",
        "--write-out", "--retry-delay", "--retry-max-time", "-e", "--referer", "--proxy", "-x",
        "--cacert", "--resolve",
    }
)  # fmt: skip
_SHORT_NO_ARG = frozenset("sSNvLkifgqI#")
_ATTACHED_SHORT = "XHduAbe"  # short options whose value may follow at once: -XPOST
_DATA_FLAGS = frozenset(
    {"-d", "--data", "--data-raw", "--data-binary", "--data-ascii", "--data-urlencode", "--json"}
)
_LONG_WITH_VALUE = _DATA_FLAGS | {"--url", "--request", "--header", "--user", "--cookie"}
_GLOB_ESCAPE = re.compile(r"\\([\[\]{}])")


def parse_curl(command: str) -> ParsedRequest:
    """Parse a ``curl`` command line; see the module docstring."""
    try:
        pipeline = split_command(command.strip())
    except ShellSplitError as exc:
        raise CurlParseError(f"cannot split the command line: {exc}") from None
    at = next((i for i, c in enumerate(pipeline) if _is_curl(c.words[0])), None)
    if at is None:
        raise CurlParseError("not a curl command")
    stdin = _piped_input(pipeline[:at], pipeline[at].stdin)
    return _Reading(stdin).read(pipeline[at].words[1:])


def _is_curl(program: str) -> bool:
    name = program.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name in ("curl", "curl.exe")


def _piped_input(before: list[Command], heredoc: str | None) -> bytes | None:
    """What curl reads on standard input: its own here-document, or what the commands
    piped into it give."""
    data: bytes | None = None
    for command in before:
        data = _filtered(command, data)
    return heredoc.encode("utf-8") if heredoc is not None else data


def _filtered(command: Command, piped: bytes | None) -> bytes:
    """The output of one command of the pipeline before curl (a few are understood)."""
    given = command.stdin.encode("utf-8") if command.stdin is not None else piped
    words = command.words
    if words[0] == "printf" and len(words) == 3 and words[1] == "%s":
        return words[2].encode("utf-8")
    if given is None:
        raise CurlParseError(f"{words[0]} before curl reads nothing")
    if words[:2] == ["head", "-c"] and len(words) == 3 and words[2].isdigit():
        return given[: int(words[2])]
    if words == ["cat"]:
        return given
    if words[0] == "base64" and words[1:] in (["-d"], ["--decode"], ["-D"]):
        try:
            return base64.b64decode(given)
        except binascii.Error as exc:
            raise CurlParseError(f"base64 -d: {exc}") from None
    raise CurlParseError(f"cannot tell what `{' '.join(words)}` pipes into curl")


@dataclass(slots=True)
class _Reading:
    """The options read so far (one per command line)."""

    stdin: bytes | None
    method: str | None = None
    url: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    data: list[bytes] = field(default_factory=list)
    is_json: bool = False
    globoff: bool = False
    head: bool = False

    def read(self, args: list[str]) -> ParsedRequest:
        it = iter(args)
        for token in it:
            flag, attached = _split_flag(token)
            if flag.startswith("-") and flag != "-":
                self._option(flag, attached, it)
            elif self.url is None:
                self.url = flag
            else:
                raise CurlParseError(f"more than one URL: {self.url!r} and {flag!r}")
        return self._request()

    def _option(self, flag: str, attached: str | None, rest: Iterator[str]) -> None:
        def value() -> str:
            if attached is not None:
                return attached
            try:
                return next(rest)
            except StopIteration:
                raise CurlParseError(f"{flag} needs a value") from None

        if flag in ("-X", "--request"):
            self.method = value().upper()
        elif flag in ("-H", "--header"):
            self.headers.append(_header(value()))
        elif flag in _DATA_FLAGS:
            self.data.append(self._body(flag, value()))
            self.is_json = self.is_json or flag == "--json"
        elif flag in ("-u", "--user"):
            cred = base64.b64encode(value().encode("utf-8")).decode("ascii")
            self.headers.append(("Authorization", f"Basic {cred}"))
        elif flag in ("-A", "--user-agent"):
            self.headers.append(("User-Agent", value()))
        elif flag in ("-b", "--cookie"):
            self.headers.append(("Cookie", _cookie(value())))
        elif flag == "--url":
            self.url = value()
        elif flag in ("-g", "--globoff"):
            self.globoff = True
        elif flag in ("-I", "--head"):
            self.head = True
        elif flag in _ARG_FLAGS_IGNORED:
            value()
        elif flag in _NO_ARG_FLAGS or (flag[1] != "-" and set(flag[1:]) <= _SHORT_NO_ARG):
            self.head = self.head or "I" in flag
            self.globoff = self.globoff or "g" in flag
        else:
            raise CurlParseError(f"unsupported curl option {flag}")

    def _body(self, flag: str, text: str) -> bytes:
        """One data option's bytes, as curl reads it."""
        if flag == "--data-urlencode":
            return _urlencoded(text).encode("ascii")
        if flag == "--data-raw" or not text.startswith("@"):
            return text.encode("utf-8")
        if text != "@-":
            raise CurlParseError(f"{flag} {text}: reading the body from a file is not supported")
        if self.stdin is None:
            raise CurlParseError(f"{flag} @- reads standard input, and nothing is piped in")
        if flag in ("-d", "--data", "--data-ascii"):  # curl drops the line breaks of a file
            return self.stdin.replace(b"\r", b"").replace(b"\n", b"")
        return self.stdin

    def _request(self) -> ParsedRequest:
        if self.url is None:
            raise CurlParseError("no URL")
        url = self.url if self.globoff else _GLOB_ESCAPE.sub(r"\1", self.url)
        body = b"&".join(self.data) if self.data else None
        headers = list(self.headers)
        names = {k.lower() for k, _ in headers}
        if self.is_json:
            headers += [(k, "application/json") for k in ("Content-Type", "Accept")
                        if k.lower() not in names]  # fmt: skip
        elif body is not None and "content-type" not in names:
            headers.append(("Content-Type", "application/x-www-form-urlencoded"))
        method = self.method or ("HEAD" if self.head else "POST" if body is not None else "GET")
        return ParsedRequest(method, url, headers, body)


def _split_flag(token: str) -> tuple[str, str | None]:
    """``--data-raw=x`` → (``--data-raw``, ``x``); ``-XPOST`` → (``-X``, ``POST``)."""
    name, eq, rest = token.partition("=")
    if token.startswith("--") and eq and name in _LONG_WITH_VALUE:
        return name, rest
    if len(token) > 2 and token[0] == "-" and token[1] in _ATTACHED_SHORT:
        return token[:2], token[2:]
    return token, None


def _header(text: str) -> tuple[str, str]:
    """``Name: value``; ``Name;`` is a header with an empty value (as curl reads it)."""
    name, sep, val = text.partition(":")
    if sep:
        return name.strip(), val.strip()
    if text.rstrip().endswith(";"):
        return text.rstrip()[:-1].strip(), ""
    raise CurlParseError(f"header without a colon: {name!r}")


def _cookie(text: str) -> str:
    if "=" not in text:
        raise CurlParseError(f"-b {text}: reading cookies from a file is not supported")
    return text


def _urlencoded(text: str) -> str:
    """``--data-urlencode``: ``content``, ``=content`` or ``name=content`` (curl's forms)."""
    name, eq, content = text.partition("=")
    if "@" in (name if eq else text):
        raise CurlParseError(f"--data-urlencode {text}: reading a file is not supported")
    if not eq:
        return quote(text, safe="")
    return (f"{name}=" if name else "") + quote(content, safe="")
