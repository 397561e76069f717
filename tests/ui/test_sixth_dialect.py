"""Acceptance: a sixth dialect, defined and registered here and nowhere else, shows up in the
CLI, auto-detect, the pipeline, the endpoint settings dialog, endpoint validation, the models
API, raw requests and frame summaries. (It lives under ``ui/`` for the Qt fixtures.)"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from streamscope.cli import build_parser, main
from streamscope.core.capture.format import Capture
from streamscope.core.net.endpoint_store import (
    EndpointConfigError,
    endpoint_from_dict,
    endpoint_to_dict,
)
from streamscope.core.net.endpoints import Endpoint
from streamscope.core.net.models_api import auth_headers, models_url, parse_models
from streamscope.core.net.raw_request import user_text
from streamscope.core.net.secrets import SecretStore
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.verdict.catalog import RULES, rules_markdown
from streamscope.core.wire.conversation import Conversation
from streamscope.core.wire.dialects import (
    Dialect,
    Evidence,
    Framing,
    RequestSpec,
    detect_dialect,
    dialect_for_path,
    dialect_names,
    get_dialect,
    registered,
)
from streamscope.core.wire.events import Ignored, StreamEvent, Terminal, TextDelta
from streamscope.core.wire.sse import SSEDecoder, SSEEvent
from streamscope.core.wire.summary import quote, summarize_events
from streamscope.ui.endpoint.demo_service import DemoService
from streamscope.ui.endpoint.settings_dialog import EndpointDialog
from support.memory_keyring import MemoryKeyring, installed

# -- the toy dialect: {"toy": "say", "text": ...} frames, then {"toy": "bye"} -----------------


class ToyParser:
    def parse(self, ev: SSEEvent) -> list[StreamEvent]:
        obj = json.loads(ev.data)
        if obj.get("toy") == "say":
            return [TextDelta(obj["text"])]
        if obj.get("toy") == "bye":
            return [Terminal("bye")]
        return [Ignored(f"toy {obj.get('toy')}")]

    def end_of_body(self) -> list[StreamEvent]:
        return []


@dataclass(frozen=True)
class Toy:
    name: str = "toy"
    label: str = "Toy talk"
    framing: Framing = "sse"
    terminal: str = "bye"
    demo_name: str | None = None
    lint: str | None = "support.toy_lint"  # its lint rules, in a module of its own
    request_paths: tuple[str, ...] = ("/talk",)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"X-Toy-Key": api_key} if api_key else {}

    def build_request(
        self,
        conv: Conversation,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> RequestSpec:
        lines = [m.text for m in conv.messages]
        headers = {**self.auth_headers(api_key), **(extra_headers or {})}
        return RequestSpec(
            "POST", f"{base_url}/talk", headers, {"toy_model": model, "lines": lines}
        )

    def new_parser(self) -> ToyParser:
        return ToyParser()

    def models_url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/toys"

    def parse_models(self, doc: Any) -> list[str]:
        return [str(t) for t in doc.get("toys", [])] if isinstance(doc, dict) else []

    def recognize(self, content_type: str | None, ev: SSEEvent) -> Evidence:
        return Evidence.TYPE_FIELD if ev.data.startswith('{"toy":') else Evidence.NONE

    def user_text(self, body: Mapping[str, Any]) -> str | None:
        lines = body.get("lines")
        return str(lines[-1]) if isinstance(lines, list) and lines else None

    def summarize(self, events: Sequence[StreamEvent]) -> str:
        if len(events) == 1 and isinstance(events[0], TextDelta):
            return f"toy says {quote(events[0].text)}"
        return summarize_events(events)


TOY: Dialect = Toy()
BODY = (
    b'data: {"toy":"hello"}\n\n'
    b'data: {"toy":"say","text":"Hel"}\n\n'
    b'data: {"toy":"say","text":"lo \xe2\x9c\x93"}\n\n'
    b'data: {"toy":"bye"}\n\n'
)


@pytest.fixture
def toy() -> Iterator[Dialect]:
    with registered(TOY) as dialect:
        yield dialect


def _frames() -> list[SSEEvent]:
    decoder = SSEDecoder()
    return decoder.feed(BODY) + decoder.close()


# -- where it must show up ---------------------------------------------------------------------


def test_it_is_unknown_until_registered() -> None:
    assert "toy" not in dialect_names()
    with pytest.raises(EndpointConfigError):
        endpoint_from_dict({"id": "t", "dialect": "toy"})
    with pytest.raises(SystemExit):
        build_parser().parse_args(["replay", "-", "--dialect", "toy"])


def test_the_registry_lists_it_after_the_builtins(toy: Dialect) -> None:
    assert dialect_names(with_auto=True)[-2:] == ("toy", "auto")
    assert get_dialect("toy") is toy


def test_cli_dialect_choices(toy: Dialect) -> None:
    parser = build_parser()
    send = ["send", "--base-url", "http://h", "--model", "m", "--dialect", "toy", "hi"]
    assert parser.parse_args(send).dialect == "toy"
    assert parser.parse_args(["replay", "-", "--dialect", "toy"]).dialect == "toy"
    assert parser.parse_args(["replay", "-", "--dialect", "auto"]).dialect == "auto"


def test_auto_detect_and_the_pipeline(toy: Dialect) -> None:
    assert detect_dialect(None, _frames()) == "toy"
    assert detect_dialect("text/event-stream", _frames()[1:2]) == "toy"
    pipe = StreamPipeline("auto", content_type="text/event-stream")
    for i in range(0, len(BODY), 7):
        pipe.feed(BODY[i : i + 7], 0.01 * i)
    turn = pipe.close(StreamEnd("eof"), 1.0)
    assert pipe.dialect_name == "toy"
    assert (turn.outcome.value if turn.outcome else None, turn.text) == ("completed", "Hello ✓")
    assert turn.warnings == ()


def test_cli_replay_auto_detects_it(
    toy: Dialect, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "toy.sse"
    body.write_bytes(BODY)
    assert main(["replay", str(body), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["outcome"], out["text"]) == ("completed", "Hello ✓")


def test_its_lint_rules_run_and_are_listed(
    toy: Dialect, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = tmp_path / "toy.sse"
    body.write_bytes(BODY.replace(b'"text":"Hel"', b'"text":""') + b'data: {"toy":"bye"}\n\n')
    assert main(["lint", str(body), "--json"]) == 1  # an error: exit 1
    out = json.loads(capsys.readouterr().out)
    assert out["dialect"] == "toy"
    found = [(f["rule"], f["severity"], f["frame"]) for f in out["findings"]]
    assert ("toy.say-text", "error", 1) in found
    assert ("toy.bye-once", "warning", 4) in found
    assert main(["lint", "--rules"]) == 0
    listed = capsys.readouterr().out
    assert "toy.say-text" in listed and "toy.bye-once" in listed
    assert "**Toy talk**" in rules_markdown()
    assert "toy.say-text" in RULES


def test_its_lint_rules_go_with_it() -> None:
    assert "toy.say-text" not in RULES
    assert "**Toy talk**" not in rules_markdown()
    assert dialect_for_path("http://h/v1/talk") is None


def test_a_recorded_request_is_known_by_its_path(toy: Dialect) -> None:
    assert dialect_for_path("http://h/v1/talk?x=1") == "toy"
    assert dialect_for_path("http://h/v1/chat/completions") == "openai"
    assert dialect_for_path("http://h/v1beta/models/m:streamGenerateContent?alt=sse") == "gemini"


def test_the_endpoint_dialog_offers_it(toy: Dialect, qtbot: QtBot) -> None:
    endpoint = Endpoint(id="t", name="Toy", base_url="http://h/v1", dialect="toy")
    with installed(MemoryKeyring()):
        dialog = EndpointDialog(endpoint, secrets=SecretStore())
        qtbot.addWidget(dialog)
        combo = dialog.dialect_combo
        items = [combo.itemText(i) for i in range(combo.count())]
        assert items == [*dialect_names(), "auto"]
        assert items[-2:] == ["toy", "auto"]
        assert dialog.endpoint().dialect == "toy"


def test_endpoint_json_accepts_it(toy: Dialect) -> None:
    endpoint = Endpoint(id="t", name="Toy", base_url="http://h/v1", dialect="toy")
    assert endpoint_from_dict(endpoint_to_dict(endpoint)).dialect == "toy"


def test_models_api_requests_and_captures_ask_it(toy: Dialect) -> None:
    endpoint = Endpoint(id="t", name="Toy", base_url="http://h/v1/", dialect="toy")
    assert models_url(endpoint) == "http://h/v1/toys"
    assert auth_headers(endpoint, "k") == {"Accept": "application/json", "X-Toy-Key": "k"}
    assert parse_models("toy", {"toys": ["a", "b"]}) == ["a", "b"]
    assert user_text({"lines": ["one", "two"]}) == "two"
    assert Capture("toy").framing() == "sse"


def test_frame_summaries(toy: Dialect) -> None:
    parser = get_dialect("toy").new_parser()
    summaries = [get_dialect("toy").summarize(parser.parse(ev)) for ev in _frames()]
    assert summaries == ["toy hello", 'toy says "Hel"', 'toy says "lo ✓"', "bye"]


class _StubDemo:
    def base_url(self, dialect: str) -> str:
        return f"http://demo/{dialect}"


def test_the_demo_maps_through_demo_name_and_does_not_serve_it(toy: Dialect) -> None:
    service = DemoService()
    service._server = _StubDemo()  # type: ignore[assignment]
    assert service.base_url("responses") == "http://demo/responses"
    assert service.base_url("auto") == "http://demo/openai"
    with pytest.raises(ValueError, match="does not serve the 'toy' dialect"):
        service.base_url("toy")
