"""Requests as curl commands and back: quoting, continuations, keys left to $API_KEY."""

from __future__ import annotations

import ast
import base64
import http.server
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from streamscope.core.net.curl import (
    HEREDOC_OVER,
    CurlParseError,
    ParsedRequest,
    parse_curl,
    to_curl,
    to_httpx_python,
)
from streamscope.core.net.raw_request import MovedSecret, raw_from_curl

KEY = "sk-CURL-SECRET-1"
BODY = (
    '{"model": "gpt-x", "messages": [{"role": "user",'
    ' "content": "It\'s naïve — 日本語 🚀 \\"q\\" $HOME `x`"}]}'
)

CASES: list[tuple[str, str, list[tuple[str, str]], bytes | None]] = [
    (
        "POST",
        "https://api.openai.com/v1/chat/completions",
        [("Authorization", f"Bearer {KEY}"), ("content-type", "application/json")],
        BODY.encode(),
    ),
    (
        "POST",
        "https://api.anthropic.com/v1/messages",
        [("x-api-key", KEY), ("anthropic-version", "2023-06-01"), ("X-Odd", "a'b\"c $d")],
        b'{"max_tokens": 10}',
    ),
    (
        "POST",
        f"https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse&key={KEY}",
        [("x-goog-api-key", KEY)],
        b"{}",
    ),
    ("GET", "http://127.0.0.1:8765/v1/models", [("api-key", KEY)], None),
    ("POST", "http://h/p?q=a%20b&x=%24y", [("Accept", "text/event-stream")], b"line1\nline2\n"),
]


def expected(
    method: str, url: str, headers: list[tuple[str, str]], body: bytes | None
) -> ParsedRequest:
    out = []
    for k, v in headers:
        if k.lower() in ("authorization",):
            v = "Bearer $API_KEY"
        elif k.lower() in ("x-api-key", "x-goog-api-key", "api-key"):
            v = "$API_KEY"
        out.append((k, v))
    return ParsedRequest(method, url.replace(KEY, "$API_KEY"), out, body)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[1].split("/")[2])
def test_to_curl_round_trips_through_parse_curl(
    case: tuple[str, str, list[tuple[str, str]], bytes | None],
) -> None:
    command = to_curl(*case)
    assert KEY not in command
    assert "\\\n  -H" in command  # one option per line
    parsed = parse_curl(command)
    exp = expected(*case)
    assert parsed.method == exp.method
    assert parsed.url == exp.url
    assert parsed.body == exp.body
    assert parsed.headers[: len(exp.headers)] == exp.headers


def test_the_key_is_expanded_by_the_shell_and_nothing_else_is() -> None:
    if shutil.which("sh") is None:  # pragma: no cover
        pytest.skip("no POSIX shell")
    method, url, headers, _body = CASES[2]
    command = to_curl(method, url, [*headers, ("X-Odd", "a'b\"c $HOME `x`")], BODY.encode())
    # Replace curl by a printer of its arguments and run the command in a real shell.
    script = 'curl() { for a in "$@"; do printf \'%s\\n\' "$a"; done; }\n' + command
    out = subprocess.run(
        ["sh", "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "API_KEY": "the-key", "HOME": "/home/x"},
    ).stdout.splitlines()
    assert "x-goog-api-key: the-key" in out
    assert "X-Odd: a'b\"c $HOME `x`" in out
    assert any(line.endswith("alt=sse&key=the-key") for line in out)
    assert BODY.split("\n")[0] in "\n".join(out)


def test_redacted_headers_also_become_the_variable() -> None:
    command = to_curl(
        "POST", "http://h/v1?key=***", {"Authorization": "Bearer ***", "Cookie": "a=b"}, b""
    )
    assert '-H "Authorization: Bearer $API_KEY"' in command
    assert '"http://h/v1?key=$API_KEY"' in command
    assert "Cookie" not in command and "***" not in command


def test_a_binary_body_is_piped_through_base64() -> None:
    body = b"\xff\x00\xfe"
    command = to_curl("POST", "http://h/", {}, body)
    assert command.startswith(f"printf %s {base64.b64encode(body).decode()} | base64 -d | curl ")
    assert "--data-binary @-" in command


def test_parse_a_pasted_multiline_command() -> None:
    command = r"""curl -sN https://api.example.com/v1/chat/completions \
  -H "Authorization: Bearer $OPENAI_API_KEY" \
  -H 'Content-Type: application/json' \
  --compressed --max-time 30 \
  -d '{
    "model": "gpt-4o",
    "messages": [{"role": "user", "content": "Say \"hi\" — ok"}]
  }'
"""
    parsed = parse_curl(command)
    assert parsed.method == "POST"
    assert parsed.url == "https://api.example.com/v1/chat/completions"
    assert parsed.header("authorization") == "Bearer $OPENAI_API_KEY"
    assert parsed.body is not None and b'"content": "Say \\"hi\\" \xe2\x80\x94 ok"' in parsed.body
    assert b"\n" in parsed.body  # newlines inside quotes are the body's own


def test_parse_options() -> None:
    p = parse_curl("curl --json '{\"a\":1}' --url=http://h/x")
    assert (p.method, p.url, p.body) == ("POST", "http://h/x", b'{"a":1}')
    assert (
        p.header("content-type") == "application/json" and p.header("accept") == "application/json"
    )
    p = parse_curl("curl -XPUT -Hx-a:1 -u user:pw -d a=1 --data b=2 http://h/")
    assert p.method == "PUT"
    assert p.headers[:2] == [("x-a", "1"), ("Authorization", "Basic dXNlcjpwdw==")]
    assert p.body == b"a=1&b=2"
    assert p.header("content-type") == "application/x-www-form-urlencoded"
    p = parse_curl("curl -v --no-buffer -A agent http://h/")
    assert (p.method, p.body, p.header("user-agent")) == ("GET", None, "agent")
    p = parse_curl("curl --request post --header 'X: y' --data-binary 'z' http://h/")
    assert (p.method, p.header("x"), p.body) == ("POST", "y", b"z")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("wget http://h/", "not a curl command"),
        ("curl -X", "needs a value"),
        ("curl -H 'nocolon' http://h/", "without a colon"),
        ("curl --frobnicate http://h/", "unsupported curl option --frobnicate"),
        ("curl -d @body.json http://h/", "from a file"),
        ("curl -H 'x: 'y", "no URL"),
        ("curl 'unterminated", "cannot split"),
        ("curl http://a/ http://b/", "more than one URL"),
    ],
)
def test_parse_errors_say_what_is_wrong(command: str, message: str) -> None:
    with pytest.raises(CurlParseError, match=message):
        parse_curl(command)


def test_to_httpx_python_reads_the_key_from_the_environment() -> None:
    method, url, headers, _body = CASES[2]
    source = to_httpx_python(method, url, [*headers, ("X-Odd", "q'\"")], BODY.encode())
    assert KEY not in source
    assert 'API_KEY = os.environ["API_KEY"]' in source
    tree = ast.parse(source)
    assigned = {
        node.targets[0].id: node.value  # type: ignore[attr-defined]
        for node in tree.body
        if isinstance(node, ast.Assign)
    }
    namespace = {"API_KEY": "K"}
    url_value = eval(compile(ast.Expression(assigned["URL"]), "<url>", "eval"), namespace)
    headers_value = eval(compile(ast.Expression(assigned["HEADERS"]), "<h>", "eval"), namespace)
    body_value = eval(compile(ast.Expression(assigned["BODY"]), "<b>", "eval"), namespace)
    assert url_value == url.replace(KEY, "K")
    assert headers_value == {"x-goog-api-key": "K", "X-Odd": "q'\""}
    assert body_value == BODY.encode()


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Keeps each POST's headers and exact body (Content-Length; HTTP/1.1, so curl's
    ``Expect: 100-continue`` is answered)."""

    protocol_version = "HTTP/1.1"
    received: ClassVar[list[tuple[dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((dict(self.headers.items()), body))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    received: list[tuple[dict[str, str], bytes]] = []
    handler = type("Handler", (_Recorder,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def awkward_body(size: int) -> bytes:
    """A chat request of about ``size`` bytes whose text has every character a shell could
    trip on: quotes, $, backticks, backslashes, newlines, non-ASCII, and the delimiter."""
    turn = (
        "It's \"quoted\" — $HOME `uname` $(id) \\n \\\\ 'single' Zürich 日本 🚀 !event\n"
        "JSON\nEOF\n\tend of line\r\n"
    )
    messages = []
    while len(json.dumps(messages, ensure_ascii=False).encode()) < size:
        messages.append({"role": "user", "content": turn * 8})
    text = json.dumps({"model": "m", "stream": True, "messages": messages}, ensure_ascii=False)
    return text.encode()


@pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("curl") is None, reason="bash, curl"
)
@pytest.mark.parametrize("size", [50_000, 300_000], ids=["50KB", "300KB"])
def test_copied_curl_runs_in_bash_and_sends_the_exact_body(
    size: int, recorder: tuple[str, list[tuple[dict[str, str], bytes]]], tmp_path: Path
) -> None:
    """Pasted into a terminal, the command is no argument of anything: bash runs a file."""
    url, received = recorder
    body = awkward_body(size)
    headers = [("Authorization", "Bearer sk-real"), ("content-type", "application/json")]
    command = to_curl("POST", url, headers, body)
    assert ("--data-raw" in command) == (len(body) <= HEREDOC_OVER)
    script = tmp_path / "copied.sh"
    script.write_text(command, encoding="utf-8")
    done = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        env={**os.environ, "API_KEY": "sk-from-env"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout == b"ok"
    [(got_headers, got_body)] = received
    assert got_body == body
    assert got_headers["Authorization"] == "Bearer sk-from-env"
    assert got_headers["content-type"] == "application/json"


def test_the_heredoc_delimiter_never_occurs_in_the_body() -> None:
    body = ("x" * HEREDOC_OVER + "\nJSON\nJSON1 JSON2\n").encode()
    command = to_curl("POST", "http://h/", {}, body)
    assert command.startswith(f"head -c {len(body)} <<'JSON3' | curl ")
    assert command.endswith("\nJSON3\n") and command.count("JSON3") == 2


# -- what browsers paste ---------------------------------------------------------------------

BROWSER_COPIES = sorted((Path(__file__).parent / "fixtures" / "curl").glob("*.txt"))


@pytest.mark.parametrize("path", BROWSER_COPIES, ids=lambda p: p.stem)
def test_a_browser_copy_parses_to_the_request_it_was_copied_from(path: Path) -> None:
    """Chrome/Edge (bash, cmd), Firefox (POSIX, Windows), Safari: quotes, newlines, tabs,
    backslashes, $, %, ^, !, & and non-ASCII in the body, a key in Authorization."""
    original = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    parsed = parse_curl(path.read_bytes().decode("utf-8"))  # (the exact bytes: CRLF stays)
    assert parsed.method == original["method"]
    assert parsed.url == original["url"]
    assert parsed.headers == [tuple(h) for h in original["headers"]]
    assert parsed.body == original["body"].encode("utf-8")
    raw, moved = raw_from_curl(parsed, environ={})
    key = next(v for k, v in parsed.headers if k.lower() == "authorization")
    assert MovedSecret("authorization", key) in moved
    assert key.removeprefix("Bearer ") not in repr(raw)
    assert raw.body == json.loads(original["body"])


@pytest.mark.parametrize(
    ("quoted", "text"),
    [
        (r"$'a\nb\tc\r\\d\'e\"f\?'", "a\nb\tc\r\\d'e\"f?"),
        (r"$'\e[0m\a\b\f\v\cA'", "\x1b[0m\a\b\f\v\x01"),
        (r"$'Z\xfcrich'", "Zürich"),  # Firefox/Safari: a code point under 256
        (r"$'Z\xc3\xbcrich \303\274'", "Zürich ü"),  # bytes that make UTF-8
        (r"$'\u65e5\u672c \U0001F680 \ud83d\ude80 \041'", "日本 🚀 🚀 !"),
        (r"$'\x4\x41\101\u41g'", "\x04AAAg"),  # short forms end at the first non-digit
        (r"a$'b'\"c\"'d'\ e", 'ab"c"d e'),  # quoted pieces glue into one word
    ],
)
def test_ansi_c_quoting_decodes_what_bash_does(quoted: str, text: str) -> None:
    assert parse_curl(f"curl http://h/ --data-raw {quoted}").body == text.encode("utf-8")


def test_cmd_carets_quotes_and_continuations() -> None:
    command = (
        'curl ^"http://h/p?q=1^&r=^%^TEMP^%^" ^\r\n'
        '  -H "X-Old: plain \\^"quoted\\^" value" ^\r\n'  # older Chrome: "…" without ^
        '  -H ^"X-Quote: a \\^"b\\^" \\\\ c^" ^\r\n'
        '  --data-raw ^"line1^\r\n\r\nline2 ""^"'
    )
    p = parse_curl(command)
    assert p.url == "http://h/p?q=1&r=%TEMP%"
    assert p.headers[:2] == [("X-Old", 'plain "quoted" value'), ("X-Quote", 'a "b" \\ c')]
    assert p.body == b'line1\nline2 "'


def test_curl_exe_does_not_double_backslashes() -> None:
    """Firefox's curl.exe form escapes quotes but leaves backslashes single."""
    p = parse_curl(
        'curl.exe ^"http://h/^" --data-raw ^"^{^\\^"a^\\^": ^\\^"x^\\^\\^"y \\n^\\^"^}^"'
    )
    assert p.body == b'{"a": "x\\"y \\n"}'


def test_options_browsers_and_people_use() -> None:
    p = parse_curl(
        "curl 'http://h/a\\[1\\]' -H 'X-Empty;' -b 'a=1; b=2' --data-urlencode 'q=a b&c' "
        "--data-urlencode '=x/y' --data-urlencode plain"
    )
    assert p.url == "http://h/a[1]"  # curl's glob escapes undone
    assert p.headers[:2] == [("X-Empty", ""), ("Cookie", "a=1; b=2")]
    assert p.body == b"q=a%20b%26c&x%2Fy&plain"
    assert p.method == "POST"
    assert parse_curl("curl -g 'http://h/a\\[1\\]'").url == "http://h/a\\[1\\]"
    assert parse_curl("curl -sI http://h/").method == "HEAD"
    assert parse_curl("curl -XDELETE http://h/ # a comment").method == "DELETE"


def test_bodies_from_standard_input() -> None:
    big = ('{"content": "' + "x'$`\\\"\n" * 30_000 + '"}').encode()
    assert parse_curl(to_curl("POST", "http://h/", {}, big)).body == big  # our heredoc form
    binary = bytes(range(256))
    assert parse_curl(to_curl("POST", "http://h/", {}, binary)).body == binary  # base64 form
    p = parse_curl("curl http://h/ --data-binary @- <<'EOF'\n{\"a\": 1}\nEOF\n")
    assert p.body == b'{"a": 1}\n'  # a here-document ends with a newline
    p = parse_curl("cat <<EOF | curl -d @- http://h/\na=1\r\n&b=2\nEOF")
    assert p.body == b"a=1&b=2"  # -d drops line breaks from what it reads


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("curl -d @- http://h/", "nothing is piped in"),
        ("curl -b cookies.txt http://h/", "cookies from a file"),
        ("curl --data-urlencode name@file http://h/", "reading a file"),
        ("jq . | curl -d @- http://h/", "jq before curl reads nothing"),
        ("curl http://h/ <<EOF\nno end", "no closing EOF line"),
        ("curl $'open", "cannot split"),
        ('curl ^"http://h/^" -d "open', "cannot split"),
    ],
)
def test_more_parse_errors_say_what_is_wrong(command: str, message: str) -> None:
    with pytest.raises(CurlParseError, match=message):
        parse_curl(command)
