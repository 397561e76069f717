"""``streamscope export --har``: captures (given, or a saved conversation's) as one HAR 1.2
file (see :mod:`streamscope.core.capture.har`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import CAPTURE_SUFFIX, Capture, CaptureError, read_capture
from streamscope.core.capture.har import capture_to_har, dump_har
from streamscope.core.store.database import Store, default_db_path

__all__ = ["conversation_capture_ids", "conversation_captures", "run_har_export"]

EXIT_USAGE = 2


def conversation_capture_ids(store: Store, conv_id: int, captures: CaptureStore) -> list[str]:
    """The capture ids of a conversation's answers, oldest first (pruned ones left out)."""
    conv = store.load_conversation(conv_id, limit=None)
    return [
        m.turn.capture_id
        for m in conv.messages
        if m.turn is not None and m.turn.capture_id and captures.exists(m.turn.capture_id)
    ]


def conversation_captures(store: Store, conv_id: int, captures: CaptureStore) -> list[Capture]:
    """The captures of a conversation's answers, oldest first (pruned ones left out)."""
    return [captures.load(i) for i in conversation_capture_ids(store, conv_id, captures)]


def _error(text: str) -> int:
    print(f"streamscope export: error: {text}", file=sys.stderr)
    return EXIT_USAGE


def run_har_export(
    args: argparse.Namespace, store: Store | None = None, captures: CaptureStore | None = None
) -> int:
    """``streamscope export --har [--conversation ID | --last | --capture FILE|ID ...]
    [-o FILE]``."""
    found: list[Capture] = []
    if args.capture:
        for name in args.capture:
            path = Path(name)
            if not path.exists() and not name.endswith(CAPTURE_SUFFIX):
                path = (captures or CaptureStore()).path(name)
            try:
                found.append(read_capture(path))
            except OSError as exc:
                return _error(f"{name}: {exc.strerror or exc}")
            except CaptureError as exc:
                return _error(f"{name}: {exc}")
    else:
        if store is None and not default_db_path().exists():
            return _error("there is no conversation yet")
        db = store if store is not None else Store()
        try:
            if args.conversation is not None:
                summary = db.conversation(args.conversation)
                if summary is None:
                    return _error(f"no conversation with id {args.conversation}")
            else:
                summary = db.most_recent_conversation()
                if summary is None:
                    return _error("there is no conversation yet")
            found = conversation_captures(db, summary.id, captures or CaptureStore())
        finally:
            if store is None:
                db.close()
        if not found:
            return _error(f"conversation {summary.id} has no stored capture")
    data = dump_har(capture_to_har(found))
    if args.output and args.output != "-":
        Path(args.output).write_bytes(data)
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0
