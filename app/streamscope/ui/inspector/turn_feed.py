"""Which turn the Inspector shows, and what feeds its tabs.

- The **live** turn (a request streaming, or a capture opened with File > Open): the chat
  controller says when its answer starts (:meth:`InspectorFeed.live_started`) and hands its
  TurnRunner's signals to :meth:`~InspectorFeed.live_request`,
  :meth:`~InspectorFeed.live_response`, :meth:`~InspectorFeed.live_progress` and
  :meth:`~InspectorFeed.live_finished`; the tabs take them as they arrive.
- **Any other turn** (an older answer clicked, the last answer of a conversation just
  opened, the alternative the pager shows): :meth:`InspectorFeed.show` reads its capture off
  the UI thread, then replays it instantly through the same pipeline, in a
  :class:`~streamscope.ui.chat.turn_runner.TurnRunner` of its own, whose batches feed the same
  tabs the same way. There is no second renderer: a turn looks the same live and later.

Clicking an older answer while a turn streams shows the older turn at once; the live turn
goes on, unseen, in a :class:`~streamscope.ui.inspector.inspector.ParkedTurn` (the
reducer's frame log, its tool calls, its latest delta), and "● Back to live" in the header,
or a click on the streaming answer, shows it again, complete — a stall can last minutes,
and whoever wants to compare it with an earlier turn should not have to wait for it to end.
Sending a new message always shows the new live turn. A turn without a capture says so in
the header and in the tabs; nothing of the turn shown before is left in them. Another part of
the window that shows a turn of its own in the tabs (the tap) says so with
:meth:`InspectorFeed.taken`: no answer is shown (selected) then.

One turn is shown, and the status bar describes it: the live turn while it streams; else,
once a turn the tabs show has ended in them, :attr:`InspectorFeed.ended` says which (a turn
other than the latest live one is named: "Turn of 14:03:12 — Completed · …").
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from streamscope.core.turn.model import Turn
from streamscope.ui.chat.turn_ref import TurnRef
from streamscope.ui.chat.turn_runner import TurnRunner
from streamscope.ui.chat.turn_start import ProgressBatch, TurnStart
from streamscope.ui.inspector.inspector import InspectorPanel, ParkedTurn
from streamscope.ui.inspector.turn_header import turn_clock

if TYPE_CHECKING:
    from collections.abc import Callable

    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.capture.format import Capture
    from streamscope.core.turn.liveness import Liveness

__all__ = ["NO_CAPTURE", "InspectorFeed", "capture_gone"]

_log = logging.getLogger("streamscope.ui")

NO_CAPTURE = (
    "No capture for this turn: it was saved before captures were kept, or its capture was"
    " removed to keep the capture folder under its size limit. Its text and outcome are in"
    " the chat; its frames, request and timings were not kept."
)


def capture_gone(path: object) -> str:
    """What the inspector says when a turn's capture file is not where it was written."""
    return (
        f"This turn's capture file is gone ({path}): its frames, request and timings cannot"
        " be shown. Its text and outcome are in the chat."
    )


class InspectorFeed(QObject):
    """See the module docstring. ``shown(key)``: the inspector now shows that turn (``-1``:
    none); ``loaded(key)``: an older turn's capture has been replayed into the tabs."""

    shown = Signal(int)
    loaded = Signal(int)
    ended = Signal(object, int, str, str)
    """``(turn, frames, which, verdict)``: the turn shown has ended in the tabs and no turn
    streams (the status bar describes it); ``which`` names it ("" for the latest live turn),
    ``verdict`` is the Verdict tab's short line once it has one (then it comes again)."""

    def __init__(
        self,
        inspector: InspectorPanel,
        captures: CaptureStore | None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._inspector = inspector
        self._header = inspector.header
        self._captures = captures
        self._io = ThreadPoolExecutor(1, thread_name_prefix="turn-load")
        self._runner = TurnRunner(None, self, warm_up=False)  # replays only: no network
        self._runner.turnStarted.connect(self._on_replay_turn_started)
        self._runner.responseStarted.connect(self._on_replay_response_started)
        self._runner.turnProgressed.connect(self._on_replay_turn_progressed)
        self._runner.turnFinished.connect(self._on_replay_turn_finished)
        self._header.backRequested.connect(self.show_live)
        self.ref: TurnRef | None = None
        """The turn shown."""
        self._live: TurnRef | None = None  # the last live turn (streaming, or parked after)
        self._streaming = False
        self._parked: ParkedTurn | None = None
        self._generation = 0  # bumped whenever another turn is to be shown
        self._replaying = -1  # the generation whose replay feeds the tabs
        self.loading: asyncio.Task[None] | None = None
        """The older turn being loaded (read, then replayed)."""

    @property
    def following_live(self) -> bool:
        """Whether the tabs show the live turn (streaming or just ended) as it arrives."""
        return (
            self._live is not None
            and self.ref is not None
            and self.ref.key == self._live.key
            and self._parked is None
        )

    # -- the live turn ------------------------------------------------------------------

    def live_started(self, ref: TurnRef) -> None:
        """A live answer starts (its request is being prepared): the tabs show it from now
        on, empty until its request goes out."""
        self._stop_loading()
        self._parked = None
        self._live, self._streaming = ref, True
        self._inspector.clear()
        self._present(ref)

    def live_request(self, start: TurnStart, ref: TurnRef) -> None:
        """The live turn's request goes out (``ref``: with its capture)."""
        self.update(ref)
        if self._parked is not None:
            self._parked.begin(start)
        elif self.following_live:
            self._inspector.begin_turn(start)

    def live_response(self, status: int, headers: list[tuple[str, str]]) -> None:
        if self._parked is not None:
            self._parked.response = (status, headers)
            self._parked.headers_t = time.monotonic()
        elif self.following_live:
            self._inspector.set_response(status, headers)

    def live_progress(self, batch: ProgressBatch) -> None:
        if self._parked is not None:
            self._parked.add(batch)
        elif self.following_live:
            self._inspector.add_progress(batch)

    def live_finished(self, turn: Turn, ref: TurnRef) -> None:
        """The live turn ended (``ref``: with its outcome). When another turn is shown, the
        status bar goes back to it."""
        self._streaming = False
        if self._parked is not None:
            self._parked.turn = turn
            if self._inspector.turn is not None:
                self._describe_shown(self._inspector.turn)
        elif self.following_live:
            self._inspector.finish_turn(turn)
            self._header.set_note(ref.note)  # (e.g. why nothing was sent)
        self.update(ref)
        self._header.set_live_elsewhere(False)

    def live_frames(self) -> int:
        """How many frames the live turn has so far (shown or parked)."""
        if self._parked is not None:
            return len(self._parked.log)
        return len(self._inspector.frames_model.log) if self.following_live else 0

    def update(self, ref: TurnRef) -> None:
        """A turn's facts changed (its outcome, its capture): the header follows."""
        if self._live is not None and self._live.key == ref.key:
            self._live = ref
        if self.ref is not None and self.ref.key == ref.key:
            self.ref = ref
            live = self._streaming and self._live is not None and self._live.key == ref.key
            self._header.show_turn(ref, live=live, state=self._header.state.text())

    # -- any turn -----------------------------------------------------------------------

    def show(self, ref: TurnRef) -> None:
        """Show ``ref`` in the tabs: the live turn as it is, another one from its capture."""
        if self._live is not None and ref.key == self._live.key:
            self._live = ref
            if self._streaming or self._parked is not None or self.following_live:
                self.show_live()
                return
        if self.ref is not None and ref.key == self.ref.key and not self.following_live:
            self.update(ref)  # (shown already, or loading)
            return
        if self._streaming and self.following_live:
            self._parked = self._inspector.park()
        elif not self._streaming:
            self._parked = None  # (an ended live turn is loaded from its capture from now on)
        self._stop_loading()
        self._present(ref, state="loading…" if ref.has_capture else "")
        if not ref.has_capture:
            self._show_missing(ref.note or NO_CAPTURE)
            return
        self._inspector.clear()  # nothing of the turn shown before stays while this loads
        self.loading = asyncio.ensure_future(self._load(ref, self._generation))

    def show_live(self) -> None:
        """Show the live turn again ("● Back to live"), complete so far."""
        live = self._live
        if live is None or self.following_live:
            return
        if self._parked is None:  # it ended and was let go: it is a turn like any other
            self.show(live)
            return
        self._stop_loading()
        parked, self._parked = self._parked, None
        self._inspector.resume(parked)
        self._present(live)
        if parked.turn is not None:  # (it ended while another turn was shown)
            self._describe_shown(parked.turn)

    def taken(self, ref: TurnRef) -> None:
        """Another part of the window (the tap) shows ``ref`` in the tabs itself: nothing is
        loaded or followed here any more, and no answer is shown (``shown`` says so). Not
        while a turn streams (it owns the tabs)."""
        self._stop_loading()
        if not self._streaming:
            self._parked = None
        self.ref = ref
        self.shown.emit(ref.key)

    def clear(self, message: str) -> None:
        """Show no turn; header and tabs say ``message``."""
        self._stop_loading()
        if self._streaming and self.following_live:  # (it goes on, unseen: "Back to live")
            self._parked = self._inspector.park()
        elif not self._streaming:
            self._parked = None
        self.ref = None
        self._inspector.clear(message)
        self._header.show_nothing(message)
        self._header.set_note("")
        self._header.set_live_elsewhere(self._streaming)
        self.shown.emit(-1)

    def show_liveness(self, live: Liveness) -> None:
        """The live turn's silence on the Timeline, while the tabs follow it."""
        if self.following_live:  # (not over an older turn shown)
            self._inspector.timeline_panel.show_liveness(live)

    def when_checked(self, callback: Callable[[str], None]) -> None:
        """``callback`` gets the Verdict tab's short line for the live turn once every frame
        is checked (when the tabs hold the live turn)."""
        if self.following_live:
            self._inspector.verdict_panel.on_final = callback

    def show_malformed_frame(self, reason: str) -> bool:
        """Select the frame ``reason`` names in the Frames tab; whether it is there."""
        return self._inspector.show_malformed_frame(reason)

    async def aclose(self) -> None:
        """Stop loading (awaited when the window closes)."""
        loading = self.loading
        self._stop_loading()
        if loading is not None:
            await asyncio.gather(loading, return_exceptions=True)
        await asyncio.gather(self._runner.wait(), return_exceptions=True)  # (nothing to save)
        self._io.shutdown(wait=False)

    # -- loading ------------------------------------------------------------------------

    def _present(self, ref: TurnRef, state: str = "") -> None:
        self.ref = ref
        live = self._live is not None and ref.key == self._live.key and self._streaming
        self._header.show_turn(ref, live=live, state=state)
        self._header.set_note("")
        self._header.set_live_elsewhere(self._streaming and not live)
        self.shown.emit(ref.key)

    def _stop_loading(self) -> None:
        """Whatever was being loaded is not wanted any more (its replay's signals are let
        go from now on; the replay itself stops within one loop turn)."""
        self._generation += 1
        if self.loading is not None and not self.loading.done():
            self.loading.cancel()
        self.loading = None
        self._runner.stop()

    def _show_missing(self, message: str) -> None:
        self._inspector.clear(message)
        self._header.set_state("")
        self._header.set_note(message)

    async def _load(self, ref: TurnRef, generation: int) -> None:
        capture = ref.capture
        if capture is None:
            if self._captures is None or ref.capture_id is None:
                self._show_missing(NO_CAPTURE)
                return
            path = self._captures.path(ref.capture_id)
            from streamscope.core.capture.format import CaptureError, read_capture

            read = functools.partial(read_capture, path, background=True)
            try:  # a 100 MB capture takes a while: read it off the UI thread
                capture = await asyncio.get_running_loop().run_in_executor(self._io, read)
            except FileNotFoundError:
                self._show_missing(capture_gone(path))
                return
            except (OSError, CaptureError, ValueError) as exc:
                _log.warning("could not read capture %s: %s", path, exc)
                self._show_missing(f"This turn's capture could not be read: {exc}")
                return
        await self._replay(capture, generation)
        if generation == self._generation:
            self._header.set_state("")
            self.loaded.emit(ref.key)

    async def _replay(self, capture: Capture, generation: int) -> None:
        await self._runner.wait()  # (a replay let go: it has been told to stop)
        if generation != self._generation:
            return
        self._replaying = generation
        self._inspector.clear()
        self._runner.start_replay(capture, speed=None)
        await self._runner.wait()

    # -- the replay's signals (only the wanted one reaches the tabs) ----------------------

    def _wanted(self) -> bool:
        return self._replaying == self._generation

    def _on_replay_turn_started(self, start: TurnStart) -> None:
        if self._wanted():
            self._inspector.begin_turn(start)

    def _on_replay_response_started(self, status: int, headers: list[tuple[str, str]]) -> None:
        if self._wanted():
            self._inspector.set_response(status, headers)

    def _on_replay_turn_progressed(self, batch: ProgressBatch) -> None:
        if self._wanted():
            self._inspector.add_progress(batch)

    def _on_replay_turn_finished(self, turn: Turn) -> None:
        if self._wanted():
            self._describe(turn)
            ref = self.ref
            if ref is not None:  # (its verdict, once checked, joins the status bar's line)
                self._inspector.verdict_panel.on_final = functools.partial(
                    self._on_shown_verdict, ref.key, turn
                )
            self._inspector.finish_turn(turn)  # (it may be checked at once)

    # -- the status bar -----------------------------------------------------------------

    def _describe(self, turn: Turn, verdict: str = "") -> None:
        """Say (``ended``) that the turn shown has ended in the tabs, unless a turn streams."""
        ref = self.ref
        if ref is None or self._streaming:
            return
        latest = self._live is not None and ref.key == self._live.key
        which = "" if latest else f"Turn of {turn_clock(ref.started)}"
        self.ended.emit(turn, len(self._inspector.frames_model.log), which, verdict)

    def _describe_shown(self, turn: Turn) -> None:
        """:meth:`_describe` the turn the tabs hold whole: with its verdict if it has been
        checked, else once it is."""
        panel = self._inspector.verdict_panel
        if panel.finished:
            self._describe(turn, panel.diagnosis())
            return
        self._describe(turn)
        if self.ref is not None:
            panel.on_final = functools.partial(self._on_shown_verdict, self.ref.key, turn)

    def _on_shown_verdict(self, key: int, turn: Turn, verdict: str) -> None:
        if verdict and self.ref is not None and self.ref.key == key:
            self._describe(turn, verdict)
