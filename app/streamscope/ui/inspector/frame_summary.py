"""One frame's exact bytes -> (event name, one-line summary), computed on demand.

Pure and Qt-free: the frames model keeps only numbers per frame and calls
:func:`summarize` for the rows a view actually paints (or a filter asks about), so the
cost is per visible row, never per received frame. The summary is dialect-agnostic: it
recognises each wire dialect by the shape of its JSON (OpenAI chat ``choices``, Anthropic
and Responses ``type``, Gemini ``candidates``, Ollama ``message``/``done``).

Examples: ``delta.content "Hel"``, ``tool_calls[1].arguments +"{\\"ci"``,
``: keep-alive``, ``[DONE]``, ``content_block_delta text "…"``,
``response.output_text.delta "…"``, ``candidates text "…"``, ``message.content "…"``.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

__all__ = ["CLIP", "quote", "split_block", "summarize"]

CLIP = 60
"""Characters of a text fragment shown in a summary before it is clipped with ``…``."""

_LINE_END = re.compile(r"\r\n|\r|\n")


def quote(text: str, limit: int = CLIP) -> str:
    """``text`` as a JSON string literal, clipped (``"Hel"``, ``"{\\"ci"``)."""
    clipped = text if len(text) <= limit else text[:limit] + "…"
    return orjson.dumps(clipped).decode()


def split_block(text: str) -> tuple[str | None, list[str], list[str]]:
    """An SSE block's ``event`` name (or ``None``), its ``data`` lines and comments."""
    event: str | None = None
    data: list[str] = []
    comments: list[str] = []
    for line in _LINE_END.split(text):
        if not line:
            continue
        if line[0] == ":":
            comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    return event, data, comments


def summarize(raw: bytes, complete: bool = True) -> tuple[str, str]:
    """The event column and the summary for one frame's bytes (SSE block or NDJSON line)."""
    text = raw.decode("utf-8", "replace")
    event, summary = _summarize_text(text)
    if not complete:
        summary = f"(incomplete) {summary}"
    return event, summary


def _summarize_text(text: str) -> tuple[str, str]:
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped:
        return "", "(blank line)"
    if stripped[0] in "{[":  # an NDJSON line (Ollama); SSE lines never start with "{"
        return "ndjson", _summarize_data(stripped)[0]
    event: str | None
    data: list[str]
    comments: list[str]
    if stripped.startswith("data: ") and stripped.count("\n") <= 2 and "\r" not in stripped:
        # The common block: one ``data:`` line and its blank line.
        event, data, comments = None, [stripped[6:].rstrip("\n")], []
    else:
        event, data, comments = split_block(stripped)
    if not data:
        if comments:
            return "comment", "; ".join(f": {c}" if c else ":" for c in comments)
        return event or "", "(no data)"
    summary, kind = _summarize_data("\n".join(data))
    if comments:
        summary = f"{summary}  ; {' ; '.join(comments)}"
    # Responses / Anthropic streams without ``event:`` lines still name the type.
    return event or kind or "message", summary


def _summarize_data(payload: str) -> tuple[str, str | None]:
    """The summary of one event's data, and its JSON ``type`` field if it has one."""
    body = payload.strip()
    if body == "[DONE]":
        return "[DONE]", None
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return f"malformed JSON {quote(body, 40)}", None
    if not isinstance(obj, dict):
        return _compact(obj), None
    kind = obj.get("type")
    kind = kind if isinstance(kind, str) else None
    if "error" in obj and not obj.get("choices"):
        return _error(obj["error"]), kind
    if kind is not None:
        return _typed(kind, obj), kind
    if "choices" in obj:
        return _openai_chat(obj), None
    if "candidates" in obj or "usageMetadata" in obj:
        return _gemini(obj), None
    if "message" in obj or "done" in obj:
        return _ollama(obj), None
    return _compact(obj), None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _compact(obj: Any, limit: int = 100) -> str:
    text = orjson.dumps(obj).decode()
    return text if len(text) <= limit else text[:limit] + "…"


def _error(err: Any) -> str:
    if isinstance(err, dict):
        code = err.get("code") or err.get("type") or err.get("status")
        message = err.get("message") or ""
        head = f"error {code}" if code else "error"
        return f"{head}: {quote(str(message), 80)}" if message else head
    return f"error: {quote(str(err), 80)}"


def _usage(usage: Any) -> str:
    if not isinstance(usage, dict):
        return "usage"
    parts = [f"{k}={v}" for k, v in usage.items() if isinstance(v, int)]
    return "usage " + " ".join(parts[:4])


# -- OpenAI chat completions -----------------------------------------------------------------


def _openai_chat(obj: dict[str, Any]) -> str:
    parts: list[str] = []
    choices = obj.get("choices") or []
    for choice in choices[:2] if isinstance(choices, list) else []:
        if not isinstance(choice, dict):
            continue
        prefix = "" if choice.get("index", 0) == 0 else f"choices[{choice.get('index')}]."
        delta = choice.get("delta")
        if isinstance(delta, dict):
            parts.extend(prefix + p for p in _openai_delta(delta))
        if choice.get("finish_reason"):
            parts.append(f"{prefix}finish_reason={choice['finish_reason']}")
    if obj.get("usage"):
        parts.append(_usage(obj["usage"]))
    if not parts:
        return "(empty delta)" if choices else "(no choices)"
    return "  ".join(parts)


def _openai_delta(delta: dict[str, Any]) -> list[str]:
    parts: list[str] = []
    if delta.get("role"):
        parts.append(f"role={delta['role']}")
    for key in ("reasoning_content", "reasoning", "content", "refusal"):
        value = delta.get(key)
        # An empty string shows only when nothing else is in the delta.
        if isinstance(value, str) and (value or (key == "content" and not parts)):
            parts.append(f"delta.{key} {quote(value)}")
    for call in delta.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        head = f"tool_calls[{call.get('index', '?')}]"
        fn = _dict(call.get("function"))
        ident = " ".join(str(v) for v in (call.get("id"), fn.get("name")) if v)
        if ident:
            parts.append(f"{head} {ident}")
        args = fn.get("arguments")
        if isinstance(args, str) and args:
            parts.append(f"{head}.arguments +{quote(args)}")
    legacy = delta.get("function_call")
    if isinstance(legacy, dict):
        if legacy.get("name"):
            parts.append(f"function_call {legacy['name']}")
        if legacy.get("arguments"):
            parts.append(f"function_call.arguments +{quote(str(legacy['arguments']))}")
    return parts


# -- Anthropic messages and OpenAI Responses (both name a "type") ----------------------------


def _typed(kind: str, obj: dict[str, Any]) -> str:
    if kind.startswith("response."):
        return _responses(kind, obj)
    match kind:
        case "message_start":
            msg = _dict(obj.get("message"))
            extra = " ".join(str(v) for v in (msg.get("id"), msg.get("model")) if v)
            return f"message_start {extra}".rstrip()
        case "content_block_start":
            block = _dict(obj.get("content_block"))
            name = " ".join(str(v) for v in (block.get("name"), block.get("id")) if v)
            return f"content_block_start [{obj.get('index')}] {block.get('type')} {name}".rstrip()
        case "content_block_delta":
            return _anthropic_delta(obj)
        case "message_delta":
            delta = _dict(obj.get("delta"))
            parts = ["message_delta"]
            if delta.get("stop_reason"):
                parts.append(f"stop_reason={delta['stop_reason']}")
            if obj.get("usage"):
                parts.append(_usage(obj["usage"]))
            return " ".join(parts)
        case "error":  # Anthropic nests the error; Responses puts it at the top level
            return _error(obj.get("error") or obj)
    if "index" in obj:
        return f"{kind} [{obj['index']}]"
    return kind


def _anthropic_delta(obj: dict[str, Any]) -> str:
    delta = _dict(obj.get("delta"))
    head = "content_block_delta"
    match delta.get("type"):
        case "text_delta":
            return f"{head} text {quote(str(delta.get('text', '')))}"
        case "thinking_delta":
            return f"{head} thinking {quote(str(delta.get('thinking', '')))}"
        case "input_json_delta":
            return (
                f"{head} [{obj.get('index')}] input_json +{quote(str(delta.get('partial_json')))}"
            )
        case "signature_delta":
            return f"{head} signature {quote(str(delta.get('signature', '')), 16)}"
    return f"{head} {_compact(delta)}"


def _responses(kind: str, obj: dict[str, Any]) -> str:
    if kind.endswith(".delta") and isinstance(obj.get("delta"), str):
        sign = "+" if "arguments" in kind else ""
        return f"{kind} {sign}{quote(obj['delta'])}"
    item = obj.get("item")
    if isinstance(item, dict):
        name = " ".join(str(v) for v in (item.get("name"), item.get("call_id")) if v)
        return f"{kind} {item.get('type')} {name}".rstrip()
    response = obj.get("response")
    if isinstance(response, dict):
        parts = [kind, f"status={response.get('status')}"]
        if response.get("usage"):
            parts.append(_usage(response["usage"]))
        details = response.get("incomplete_details")
        if isinstance(details, dict) and details.get("reason"):
            parts.append(f"reason={details['reason']}")
        if response.get("error"):
            parts.append(_error(response["error"]))
        return " ".join(parts)
    if isinstance(obj.get("arguments"), str):
        return f"{kind} {quote(obj['arguments'])}"
    if kind == "error" or "message" in obj:
        return _error(obj)
    return kind


# -- Gemini ----------------------------------------------------------------------------------


def _gemini(obj: dict[str, Any]) -> str:
    parts: list[str] = []
    for cand in obj.get("candidates") or []:
        if not isinstance(cand, dict):
            continue
        content = _dict(cand.get("content"))
        for part in content.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                what = "thought" if part.get("thought") else "text"
                parts.append(f"candidates {what} {quote(part['text'])}")
            elif isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                args = _compact(call.get("args", {}), 60)
                parts.append(f"candidates functionCall {call.get('name')} {args}")
        if cand.get("finishReason"):
            parts.append(f"finishReason={cand['finishReason']}")
    if obj.get("usageMetadata"):
        parts.append(_usage(obj["usageMetadata"]))
    return "  ".join(parts) if parts else "candidates (empty)"


# -- Ollama (NDJSON) -------------------------------------------------------------------------


def _ollama(obj: dict[str, Any]) -> str:
    parts: list[str] = []
    msg = obj.get("message")
    if isinstance(msg, dict):
        for key in ("thinking", "content"):
            value = msg.get(key)
            if isinstance(value, str) and value:
                parts.append(f"message.{key} {quote(value)}")
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                args = _compact(fn.get("arguments", {}), 60)
                parts.append(f"message.tool_calls {fn.get('name')} {args}")
    if obj.get("done"):
        reason = obj.get("done_reason")
        parts.append(f"done done_reason={reason}" if reason else "done")
        if isinstance(obj.get("eval_count"), int):
            parts.append(f"eval_count={obj['eval_count']}")
    if not parts:
        return 'message.content ""' if isinstance(msg, dict) else _compact(obj)
    return "  ".join(parts)
