"""Conversations out: Markdown for people, JSON for programs, and ``streamscope export``.

The JSON shape (``format`` / ``version`` identify it; readers ignore unknown keys)::

    {"format": "streamscope-conversation", "version": 1,
     "id": 3, "title": "Weather test", "endpoint": "Built-in demo", "model": "demo-tools",
     "created": "2026-11-29T21:30:00+00:00", "updated": "...",
     "tools": [{"name", "description", "parameters"}],
     "messages": [
       {"seq": 0, "role": "user", "text": "...", "created": "...", "after": null,
        "chosen": true},
       {"seq": 1, "role": "assistant", "text": "...", "created": "...", "after": 0, ...
        "reasoning": "...", "reasoning_channel": "reasoning_content",
        "tool_calls": [{"id", "name", "arguments"}],        # arguments: raw text
        "turn": {"outcome", "reason", "finish_reason", "usage", "input_tokens",
                 "output_tokens", "warnings", "ttft", "alternative_group", "chosen",
                 "capture_id"}},
       {"seq": 2, "role": "tool", "text": "...", "tool_call_id": "...", "name": "...",
        "created": "..."}]}

Every message is exported, on every branch: ``after`` is the ``seq`` of the message it
follows (``null``: it opens the conversation); messages after the same one are alternatives of
one step (regenerated answers — ``alternative_group`` ties those together too — or edited
prompts), and ``chosen`` marks the one shown, in the context. Markdown shows the shown path and
mentions the alternatives.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from streamscope.core.store.database import (
    Store,
    StoredConversation,
    StoredMessage,
    default_db_path,
)
from streamscope.core.store.records import active_path

__all__ = ["EXPORT_FORMAT", "conversation_to_json", "conversation_to_markdown", "run_export"]

EXPORT_FORMAT = "streamscope-conversation"
EXIT_USAGE = 2


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def _message_json(m: StoredMessage, seqs: dict[int, int]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "seq": m.seq,
        "role": m.role,
        "text": m.text,
        "created": _iso(m.created),
        "after": seqs.get(m.parent_id) if m.parent_id is not None else None,
        "chosen": m.chosen,
    }
    if m.role == "tool":
        out["tool_call_id"] = m.tool_call_id
        out["name"] = m.name
    if m.role == "assistant":
        out["reasoning"] = m.reasoning
        out["reasoning_channel"] = m.reasoning_channel
        out["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls
        ]
        t = m.turn
        out["turn"] = (
            None
            if t is None
            else {
                "outcome": t.outcome.value if t.outcome is not None else t.status,
                "reason": t.reason,
                "finish_reason": t.finish_reason,
                "usage": t.usage,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
                "warnings": list(t.warnings),
                "ttft": t.timings.ttft if t.timings is not None else None,
                "alternative_group": t.alt_group,
                "chosen": t.chosen,
                "capture_id": t.capture_id,
            }
        )
    return out


def conversation_to_json(conv: StoredConversation) -> dict[str, Any]:
    """The documented JSON shape (see the module docstring)."""
    s = conv.summary
    seqs = {m.id: m.seq for m in conv.messages}
    return {
        "format": EXPORT_FORMAT,
        "version": 1,
        "id": s.id,
        "title": s.title,
        "endpoint": s.endpoint_name,
        "model": s.model,
        "created": _iso(s.created),
        "updated": _iso(s.updated),
        "tools": [
            {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            for t in conv.tools
        ],
        "messages": [_message_json(m, seqs) for m in conv.messages],
    }


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _assistant_md(m: StoredMessage, alternatives: int) -> list[str]:
    t = m.turn
    head = "## Assistant"
    if t is not None and t.outcome is not None:
        head += f" · {t.outcome.value}"
        if t.finish_reason:
            head += f" · {t.finish_reason}"
    out = [head, ""]
    if alternatives > 1:
        out += [f"_(chosen answer; {alternatives - 1} other alternative(s) not shown)_", ""]
    if m.reasoning:
        label = f"Reasoning ({m.reasoning_channel})" if m.reasoning_channel else "Reasoning"
        quoted = "\n".join(f"> {line}" if line else ">" for line in m.reasoning.splitlines())
        out += [f"<details><summary>{label}</summary>", "", quoted, "", "</details>", ""]
    if m.text:
        out += [m.text, ""]
    for call in m.tool_calls:
        out += [
            f"**Tool call** `{call.name}` (id `{call.id}`)",
            "",
            _fence(call.arguments, "json"),
            "",
        ]
    if t is not None and t.outcome is not None and t.outcome.value != "completed":
        out += [f"_{t.outcome.value.capitalize()}: {t.reason}_", ""]
    return out


def conversation_to_markdown(conv: StoredConversation) -> str:
    """A readable Markdown transcript of the shown path (the chosen alternatives)."""
    s = conv.summary
    where = " · ".join(x for x in (s.endpoint_name, s.model) if x)
    out = [f"# {s.title or 'Untitled conversation'}", ""]
    if where:
        out += [f"_{where} · {_iso(s.created)}_", ""]
    siblings: dict[int | None, int] = {}
    for m in conv.messages:
        siblings[m.parent_id] = siblings.get(m.parent_id, 0) + 1
    for m in active_path(conv.messages):
        others = siblings.get(m.parent_id, 1) - 1
        if m.role == "user":
            out += ["## You", ""]
            if others:
                out += [f"_(edited; {others} other version(s) not shown)_", ""]
            out += [m.text, ""]
        elif m.role == "tool":
            out += [f"## Tool result · `{m.name}` (id `{m.tool_call_id}`)", "", _fence(m.text), ""]
        else:
            out += _assistant_md(m, others + 1)
    return "\n".join(out).rstrip() + "\n"


def run_export(args: argparse.Namespace, store: Store | None = None) -> int:
    """``streamscope export [--conversation ID | --last] --format {md,json} [-o FILE]``."""
    own = store is None
    if store is None and not default_db_path().exists():
        print("streamscope export: error: there is no conversation yet", file=sys.stderr)
        return EXIT_USAGE
    db = store if store is not None else Store()
    try:
        if args.conversation is not None:
            summary = db.conversation(args.conversation)
            if summary is None:
                print(
                    f"streamscope export: error: no conversation with id {args.conversation}",
                    file=sys.stderr,
                )
                return EXIT_USAGE
        else:
            summary = db.most_recent_conversation()
            if summary is None:
                print("streamscope export: error: there is no conversation yet", file=sys.stderr)
                return EXIT_USAGE
        conv = db.load_conversation(summary.id, limit=None)
    finally:
        if own:
            db.close()
    if args.format == "json":
        text = orjson.dumps(conversation_to_json(conv), option=orjson.OPT_INDENT_2).decode() + "\n"
    else:
        text = conversation_to_markdown(conv)
    if args.output and args.output != "-":
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0
