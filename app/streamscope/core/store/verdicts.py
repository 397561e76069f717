"""A turn's short verdict line ("2 spec errors · buffered by a proxy"), kept with the turn.

A live turn's line is kept when the Verdict tab has checked the turn
(:meth:`~streamscope.core.store.session.ChatSession.answer_checked`), with the digest of the
rules that made it (:func:`~streamscope.core.verdict.catalog.rules_digest`). A turn shown
later whose kept line was made by other rules — or never made: an answer saved before lines
were kept, a live turn whose check did not finish — is checked again from its capture by
:func:`recheck`, the job a window hands to a worker thread for a turn it shows (never for
every turn of a profile).
"""

from __future__ import annotations

from pathlib import Path

from streamscope.core.capture.format import CaptureError, read_capture
from streamscope.core.capture.lint import verdict_line
from streamscope.core.store.messages import MessageRows
from streamscope.core.verdict.catalog import rules_digest

__all__ = ["RECHECK_LIMIT", "recheck"]

RECHECK_LIMIT = 16 * 1024 * 1024
"""A capture file longer than this is not checked again in the window's background (the
Verdict tab checks it when the turn is shown there; ``streamscope lint`` checks any length)."""


def recheck(
    store: MessageRows,
    message_id: int,
    capture: Path,
    rules: str | None = None,
    *,
    limit: int = RECHECK_LIMIT,
) -> str | None:
    """Check the turn's ``capture`` file as ``streamscope lint`` does and keep its verdict
    line with the turn (message ``message_id``) under ``rules`` (by default the current
    rules' digest); returns the line. ``None``: the capture could not be checked (gone,
    damaged, longer than ``limit``), and nothing is kept. Blocking: run it in a worker
    thread (it lets the interpreter lock go as it reads and checks)."""
    if rules is None:
        rules = rules_digest()
    try:
        if capture.stat().st_size > limit:
            return None
        recorded = read_capture(capture, background=True)
    except (OSError, CaptureError, ValueError):
        return None
    line = verdict_line(recorded, background=True)
    store.save_verdict(message_id, line, rules)
    return line
