"""The request is the conversation: the whole stored conversation is sent, whatever part of it
was loaded; a context policy cuts only between exchanges and says what it cut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from streamscope.core.store.database import Store
from streamscope.core.store.history import ChatHistory
from streamscope.core.store.records import to_chat_history
from streamscope.core.store.session import ChatSession
from streamscope.core.wire.context import (
    ContextCut,
    ContextPolicy,
    apply_policy,
    body_messages,
    exchange_starts,
    message_size,
)
from streamscope.core.wire.conversation import Conversation, Message, ToolCall
from streamscope.core.wire.dialects import dialect_names, get_dialect
from support.big_profile import LONG_EXCHANGES, cached_profile

U = "user"
A = "assistant"


def msgs(*spec: str) -> list[Message]:
    """``"u1"``, ``"a1"``, ``"c1"`` (an assistant tool call), ``"t1"`` (its result)."""
    out: list[Message] = []
    for item in spec:
        kind, n = item[0], item[1:]
        if kind == "u":
            out.append(Message("user", f"q{n}"))
        elif kind == "a":
            out.append(Message("assistant", f"answer {n}"))
        elif kind == "c":
            out.append(Message("assistant", "", tool_calls=(ToolCall(f"c{n}", "f", "{}"),)))
        else:
            out.append(Message("tool", "42", tool_call_id=f"c{n}", name="f"))
    return out


# -- the policy ---------------------------------------------------------------------------


def test_the_whole_conversation_by_default() -> None:
    messages = msgs("u1", "a1", "u2", "c2", "t2", "a2", "u3")
    sent, cut = apply_policy(messages)
    assert sent == messages
    assert cut == ContextCut(7, 7, cut.sent_bytes, cut.sent_bytes, ContextPolicy())
    assert cut.sent_bytes == sum(message_size(m) for m in messages) == 2 + 8 + 2 + 3 + 2 + 8 + 2
    assert not cut.cut
    assert cut.words() == "sending 7 messages · 27 B"


def test_exchanges_start_at_user_messages() -> None:
    assert exchange_starts(msgs("u1", "a1", "u2", "c2", "t2", "a2", "u3")) == [0, 2, 6]
    assert exchange_starts(msgs("a0", "u1", "a1")) == [0, 1]  # (opens without one)
    assert exchange_starts([]) == []


def test_last_n_exchanges_cut_before_a_user_message() -> None:
    messages = msgs("u1", "a1", "u2", "c2", "t2", "a2", "u3", "a3", "u4")
    policy = ContextPolicy("exchanges", 2)
    sent, cut = apply_policy(messages, policy)
    assert sent == messages[6:]  # u3 a3 u4
    assert (cut.sent, cut.total) == (3, 9)
    assert cut.cut
    assert cut.words() == "sending 3 of 9 messages · 12 B — policy: last 2 exchanges"
    # the tool call's exchange is kept whole, or not at all
    sent, _ = apply_policy(messages, ContextPolicy("exchanges", 3))
    assert sent == messages[2:]
    assert sent[0].role == U
    # more exchanges allowed than there are: everything
    sent, cut = apply_policy(messages, ContextPolicy("exchanges", 4))
    assert sent == messages and not cut.cut
    assert cut.words() == "sending 9 messages · 37 B — policy: last 4 exchanges"


def test_a_budget_keeps_whole_exchanges_from_the_end() -> None:
    messages = msgs("u1", "a1", "u2", "c2", "t2", "a2", "u3")  # sizes 10, 15, 2
    sent, cut = apply_policy(messages, ContextPolicy("budget", 17))
    assert sent == messages[2:]  # 15 + 2: the second exchange fits, the first does not
    assert (cut.sent, cut.sent_bytes, cut.total_bytes, cut.over_budget) == (5, 17, 27, False)
    sent, cut = apply_policy(messages, ContextPolicy("budget", 16))
    assert sent == messages[6:] and cut.sent_bytes == 2
    sent, cut = apply_policy(messages, ContextPolicy("budget", 27))
    assert sent == messages and not cut.cut


def test_the_last_exchange_is_sent_even_over_the_budget() -> None:
    messages = [*msgs("u1", "a1"), Message("user", "x" * 5000)]
    sent, cut = apply_policy(messages, ContextPolicy("budget", 1024))
    assert sent == messages[2:]
    assert cut.over_budget
    assert cut.words() == (
        "sending 1 of 3 messages · 4.9 KB — policy: at most 1.0 KB;"
        " the last exchange alone is 4.9 KB"
    )


def test_sizes_count_utf8_and_tool_calls() -> None:
    assert message_size(Message("user", "Ключ 🔑")) == len("Ключ 🔑".encode()) == 13
    call = ToolCall("c1", "get_weather", '{"city": "Zürich"}')
    assert message_size(Message("assistant", "ok", tool_calls=(call,))) == 2 + 11 + 19


def test_a_body_says_how_many_messages_it_carries() -> None:
    assert body_messages({"messages": [{}, {}, {}]}) == 3  # OpenAI chat, Anthropic, Ollama
    assert body_messages({"contents": [{}, {}]}) == 2  # Gemini
    assert body_messages({"input": [{}, {}, {}, {}]}) == 4  # Responses
    assert body_messages({"input": "hello"}) == 1  # Responses, a bare prompt
    assert body_messages({"prompt": "x"}) is None
    assert body_messages({"messages": "not a list", "contents": [{}]}) == 1


def test_a_policy_must_make_sense() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ContextPolicy("exchanges", 0)
    with pytest.raises(ValueError, match="unknown"):
        ContextPolicy("newest", 3)  # type: ignore[arg-type]
    assert ContextPolicy("exchanges", 1).words() == "last 1 exchange"
    assert ContextPolicy("budget", 200 * 1024).words() == "at most 200.0 KB"
    assert ContextPolicy().words() == "whole conversation"


# -- the stored conversation, opened with only its latest messages -----------------------


@pytest.fixture(scope="module")
def long_conversation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    home = tmp_path_factory.mktemp("profile")
    facts = cached_profile(home, small=True)
    return Path(facts.path), facts.long_id


def whole_history(store: Store, conv_id: int) -> ChatHistory:
    return to_chat_history(store.load_conversation(conv_id, limit=None).messages)


def body(dialect: str, conv: Conversation) -> dict[str, Any]:
    spec = get_dialect(dialect).build_request(
        conv, base_url="http://127.0.0.1:9/v1", model="m", api_key="k"
    )
    parsed: dict[str, Any] = orjson.loads(orjson.dumps(spec.json))
    return parsed


def first_and_count(dialect: str, payload: dict[str, Any]) -> tuple[str, int]:
    """The role of the first message the body sends (after a system message), and how many
    items it sends."""
    key = {"gemini": "contents", "responses": "input"}.get(dialect, "messages")
    items = [m for m in payload[key] if m.get("role") != "system"]
    first = items[0]
    return str(first.get("role", first.get("type"))), len(items)


@pytest.mark.parametrize("dialect", dialect_names())
def test_a_long_conversation_opened_with_its_last_cards_is_sent_whole(
    long_conversation: tuple[Path, int], dialect: str
) -> None:
    path, conv_id = long_conversation
    with Store(path) as store:
        session = ChatSession.open(store, conv_id, limit=200)  # as the window opened it
        assert session.has_more and len(session.history.messages()) <= 200
        whole = whole_history(store, conv_id)
        expected = whole.messages()
        assert len(expected) == 684  # 727 stored: 43 of them alternatives not on the path
        assert session.context() == expected
        conv, cut = session.conversation(system="be brief")
        assert (cut.sent, cut.total) == (684, 684)
        assert body(dialect, conv) == body(dialect, whole.conversation(system="be brief"))
        role, _ = first_and_count(dialect, body(dialect, conv))
        assert role == U
        assert conv.messages[0] == expected[0]


@pytest.mark.parametrize("dialect", dialect_names())
def test_the_policy_cuts_the_stored_conversation_exactly(
    long_conversation: tuple[Path, int], dialect: str
) -> None:
    path, conv_id = long_conversation
    with Store(path) as store:
        session = ChatSession.open(store, conv_id, limit=200)
        expected = whole_history(store, conv_id).messages()
        users = [i for i, m in enumerate(expected) if m.role == "user"]
        assert len(users) == LONG_EXCHANGES
        conv, cut = session.conversation(ContextPolicy("exchanges", 100))
        assert list(conv.messages) == expected[users[-100] :]
        assert conv.messages[0].role == U
        assert cut.words().startswith(f"sending {len(conv.messages)} of 684 messages · ")
        assert cut.words().endswith(" — policy: last 100 exchanges")
        role, count = first_and_count(dialect, body(dialect, conv))
        assert role == U
        assert count >= 100
        # more than what was loaded (200 messages) is reachable by the policy too
        conv, cut = session.conversation(ContextPolicy("exchanges", 250))
        assert list(conv.messages) == expected[users[-250] :]
        assert cut.sent > 200


def test_sending_on_from_a_partly_loaded_conversation_keeps_the_beginning(
    long_conversation: tuple[Path, int], tmp_path: Path
) -> None:
    path, conv_id = long_conversation
    copy = tmp_path / "streamscope.db"
    copy.write_bytes(path.read_bytes())
    with Store(copy) as store:
        session = ChatSession.open(store, conv_id, limit=20)
        first = session.context()[0]
        session.user_sent("and one more", endpoint_name="demo", model="m")
        context = session.context()
        assert context[0] == first
        assert context[-1] == Message("user", "and one more")
        assert len(context) == 685
        # the edited last prompt replaces the one it edits in what is sent
        session.edit_last()
        session.user_sent("one more, edited", endpoint_name="demo", model="m")
        context = session.context()
        assert len(context) == 685 and context[-1].text == "one more, edited"
        assert context[0] == first
