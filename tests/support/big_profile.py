"""A profile of a year of use, built through the app's own store: the fixture that tests and
benchmarks of history at scale share.

    facts = build_profile(home)            # ~1,000 conversations, ~70k messages, ~134 MB
    facts = build_profile(home, small=True)  # 60 conversations, the same long one (tests)

The database is written with :class:`~streamscope.core.store.database.Store`'s own calls, as a
:class:`~streamscope.core.store.session.ChatSession` makes them (user message, assistant
message begun then finished with its Turn, tool results, a regenerated answer now and then),
on a clock that runs over twelve months. Text is Markdown of the shapes answers have
(paragraphs, lists, code blocks, tables) in several scripts (Latin, Cyrillic, CJK, emoji),
deterministic for a seed. The second most recent conversation is the long one: 300 exchanges,
727 messages (tool calls and their results, regenerated answers); the most recent has 99.
Every conversation holds one word found nowhere else (``uniq<ID>`` with its id, in its
middle message) and every tenth one the word ``needle`` — for search tests.

:func:`cached_profile` keeps one build per size in the temporary folder and copies it: the
full build takes about a minute.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from streamscope.core.store.database import Store
from streamscope.core.store.history import ToolResult
from streamscope.core.store.search_index import index_step
from streamscope.core.turn.model import Timings, ToolCallState, Turn
from streamscope.core.turn.outcome import Outcome

__all__ = ["LONG_EXCHANGES", "LONG_MESSAGES", "ProfileFacts", "build_profile", "cached_profile"]

VERSION = 2
"""Bump when the profile's shape changes (cached builds are keyed by it)."""

LONG_EXCHANGES = 300
LONG_MESSAGES = 727
LATEST_MESSAGES = 99
ANSWER_CHARS = 3580
"""An answer's mean length (gives ~134 MB of text in ~70k messages)."""
YEAR = 365 * 24 * 3600.0
START = 1_735_689_600.0  # 2025-01-01

_LATIN = [
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
    "reader",
    "can",
    "see",
    "what",
    "was",
    "received",
    "and",
    "when",
    "model",
    "answer",
    "request",
    "context",
    "message",
    "tool",
    "call",
    "arguments",
    "result",
    "cache",
    "latency",
    "server",
    "client",
    "proxy",
    "gateway",
    "budget",
    "policy",
    "exchange",
    "history",
    "conversation",
    "search",
    "index",
    "scroll",
    "card",
]
_CYRILLIC = [
    "поток",
    "токенов",
    "приходит",
    "быстро",
    "окно",
    "ключ",
    "ответ",
    "модель",
    "запрос",
    "сервер",
]
_CJK = ["流式", "令牌", "到达", "很快", "窗口", "保持", "字节", "模型", "回答", "请求"]
_EMOJI = ["🚀", "✅", "⚠️", "🧪", "📦"]


@dataclass(frozen=True)
class ProfileFacts:
    """What was built: counts, the long and the latest conversation, the text's size."""

    conversations: int
    messages: int
    text_bytes: int
    long_id: int
    long_messages: int
    latest_id: int
    needle_conversations: int
    path: str


class _Words:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def sentence(self, n: int) -> str:
        rng = self.rng
        words = []
        for _ in range(n):
            r = rng.random()
            pool = _LATIN if r < 0.86 else _CYRILLIC if r < 0.93 else _CJK if r < 0.985 else _EMOJI
            words.append(rng.choice(pool))
        words[0] = words[0].capitalize()
        return " ".join(words) + "."

    def paragraph(self) -> str:
        return " ".join(
            self.sentence(self.rng.randint(6, 18)) for _ in range(self.rng.randint(2, 6))
        )

    def answer(self, target: int) -> str:
        """Markdown of about ``target`` characters."""
        rng = self.rng
        parts: list[str] = []
        size = 0
        while size < target:
            kind = rng.random()
            if kind < 0.55:
                block = self.paragraph()
            elif kind < 0.7:
                block = "\n".join(f"- {self.sentence(rng.randint(4, 10))}" for _ in range(4))
            elif kind < 0.85:
                lines = [f"    value_{i} = compute({i}, 'x{i}')" for i in range(rng.randint(3, 12))]
                block = (
                    "```python\ndef example():\n" + "\n".join(lines) + "\n    return value_0\n```"
                )
            elif kind < 0.93:
                rows = [f"| {rng.choice(_LATIN)} | {rng.randint(1, 999)} |" for _ in range(4)]
                block = "| name | value |\n|---|---|\n" + "\n".join(rows)
            else:
                block = f"## {self.sentence(3)[:-1]}"
            parts.append(block)
            size += len(block) + 2
        return "\n\n".join(parts)


def _turn(text: str, rng: random.Random, *, calls: tuple[ToolCallState, ...] = ()) -> Turn:
    tokens = max(1, len(text) // 4)
    finish = "tool_calls" if calls else rng.choice(["stop"] * 12 + ["length"])
    return Turn(
        text=text,
        tool_calls=calls,
        finish_reason=finish,
        output_tokens=tokens,
        input_tokens=rng.randint(50, 9000),
        model="demo",
        timings=Timings(),
        events=tokens + 3,
        bytes_received=len(text.encode()) * 3,
        terminal_signal="[DONE]",
        outcome=Outcome.COMPLETED,
        reason="",
        status=200,
        dialect="openai",
    )


class _Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _conversation(
    store: Store,
    clock: _Clock,
    words: _Words,
    rng: random.Random,
    *,
    number: int,
    exchanges: int,
    tool_every: int,
    regen_every: int,
    answer_chars: int,
) -> tuple[int, int, int]:
    """One conversation; returns (id, messages, text bytes)."""
    conv = store.create_conversation(
        f"{words.sentence(rng.randint(2, 6))[:-1]} #{number}",
        endpoint_name="Built-in demo",
        model="demo",
    )
    count = 0
    size = 0
    parent: int | None = None
    middle = exchanges // 2
    for i in range(exchanges):
        clock.t += rng.uniform(20, 400)
        prompt = words.sentence(rng.randint(8, 40))
        if i == middle:
            prompt += f" uniq{conv}"
            if number % 10 == 0:
                prompt += " needle"
        parent = store.add_user_message(conv, prompt, parent_id=parent)
        count += 1
        size += len(prompt.encode())
        tools = bool(tool_every) and i % tool_every == tool_every - 1
        regen = bool(regen_every) and i % regen_every == 3 % regen_every
        if regen:  # an earlier answer, kept as an alternative
            first = words.answer(answer_chars // 2)
            msg = store.begin_assistant_message(conv, parent_id=parent, model="demo")
            store.finish_assistant_message(msg, _turn(first, rng))
            count += 1
            size += len(first.encode())
            clock.t += 5
        if tools:
            call = ToolCallState(0, f"call_{conv}_{i}", "get_weather", '{"city": "Zürich"}')
            msg = store.begin_assistant_message(conv, parent_id=parent, model="demo")
            store.finish_assistant_message(msg, _turn("", rng, calls=(call,)))
            (result,) = store.add_tool_results(
                conv,
                [ToolResult(call.id, "get_weather", '{"temp_c": 4, "sky": "☁️"}')],
                parent_id=msg,
            )
            parent = result
            count += 2
            size += 60
        text = words.answer(rng.randint(answer_chars // 2, answer_chars * 3 // 2))
        msg = store.begin_assistant_message(conv, parent_id=parent, model="demo")
        store.finish_assistant_message(msg, _turn(text, rng))
        parent = msg
        count += 1
        size += len(text.encode())
    return conv, count, size


def build_profile(
    home: str | Path, *, small: bool = False, seed: int = 1, indexed: bool = True
) -> ProfileFacts:
    """Build the profile's database in ``home`` (``STREAMSCOPE_HOME`` layout:
    ``home/data/streamscope.db``) and return what it holds; ``indexed``: with its search
    index complete, as the app leaves it once it has run (else it indexes at first start)."""
    path = Path(home) / "data" / "streamscope.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    words = _Words(rng)
    clock = _Clock(START)
    others = 58 if small else 998
    per_other = 68_685 // 998  # messages in an average other conversation (~69)
    store = Store(path, clock=clock)
    totals = [0, 0]
    needles = 0
    long_id = latest_id = 0
    try:
        store._db.execute("PRAGMA synchronous = OFF")  # (a fixture: no power loss to survive)
        step = (YEAR - 40 * 86400) / others
        for n in range(others):
            clock.t = START + n * step
            # ~29 exchanges a conversation give ~69 messages (tool calls, alternatives)
            exchanges = max(2, int(rng.gauss(per_other / 2.23, 8)))
            _, count, size = _conversation(
                store,
                clock,
                words,
                rng,
                number=n,
                exchanges=exchanges,
                tool_every=9,
                regen_every=13,
                answer_chars=ANSWER_CHARS,
            )
            totals[0] += count
            totals[1] += size
            needles += n % 10 == 0
        clock.t = START + YEAR - 30 * 86400
        # the long one: 300 exchanges, 727 messages (42 with a tool call, 43 alternatives)
        long_id, count, size = _conversation(
            store,
            clock,
            words,
            rng,
            number=others,
            exchanges=LONG_EXCHANGES,
            tool_every=7,
            regen_every=7,
            answer_chars=ANSWER_CHARS,
        )
        needles += others % 10 == 0
        totals[0] += count
        totals[1] += size
        assert count == LONG_MESSAGES, count
        clock.t += 3600
        latest_id, count, size = _conversation(
            store,
            clock,
            words,
            rng,
            number=others + 1,
            exchanges=45,
            tool_every=11,
            regen_every=45,
            answer_chars=ANSWER_CHARS,
        )
        needles += (others + 1) % 10 == 0
        assert count == LATEST_MESSAGES, count
        totals[0] += count
        totals[1] += size
        if indexed:  # (as a profile is once the app has run: its search index complete)
            while index_step(store._db, 5000):
                pass
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return ProfileFacts(
        conversations=others + 2,
        messages=totals[0],
        text_bytes=totals[1],
        long_id=long_id,
        long_messages=LONG_MESSAGES,
        latest_id=latest_id,
        needle_conversations=needles,
        path=str(path),
    )


def cached_profile(home: str | Path, *, small: bool = False) -> ProfileFacts:
    """:func:`build_profile` into ``home``, copied from a build kept in the temporary folder
    (made on first use; keyed by this module's text)."""
    from streamscope.core.store.schema import SCHEMA_VERSION  # (a build is of one schema)

    shape = f"{VERSION}{small}{SCHEMA_VERSION}"
    key = hashlib.sha256(Path(__file__).read_bytes() + shape.encode()).hexdigest()
    cache = Path(tempfile.gettempdir()) / f"streamscope-profile-{key[:16]}"
    facts_file = cache / "facts.json"
    if not facts_file.exists():
        building = Path(tempfile.mkdtemp(prefix="streamscope-profile-build-"))
        facts = build_profile(building, small=small)
        (building / "facts.json").write_text(json.dumps(asdict(facts)))
        try:
            os.replace(building, cache)
        except OSError:  # another process built it meanwhile
            shutil.rmtree(building, ignore_errors=True)
    facts = json.loads(facts_file.read_text())
    path = Path(home) / "data" / "streamscope.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cache / "data" / "streamscope.db", path)
    return ProfileFacts(**{**facts, "path": str(path)})
