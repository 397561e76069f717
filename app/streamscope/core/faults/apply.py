"""Faults applied to a playback: :func:`apply` takes a response as timed writes and returns it
as the fault spec says this request should get it, with a record of each fault.

How a fault changes the writes (frames and offsets are the original body's):

- ``cut@byte:N`` — the bytes before offset N are written as recorded, then the connection
  drops (end ``cut``) when the write holding byte N was due. ``cut@frame:N`` is the same at
  the middle of frame N (after ``max(1, len // 2)`` of its bytes).
- ``error@frame:N`` — frames before N as recorded; at frame N's time its bytes are replaced by
  the dialect's error frame (:func:`~streamscope.core.faults.shapes.error_frame`), then a
  clean close. The error frame goes out in the same write as whatever of its read came first.
- ``drop-terminal`` — the frame with the terminal signal and everything after it are not sent;
  the close comes when that frame was due.
- ``garble@frame:N`` — frame N's payload edited in place
  (:func:`~streamscope.core.faults.shapes.garble_edit`); the read boundaries stay.
- ``stall@frame:N=S`` — every write from frame N's first byte on is S seconds later.
- ``slow=MS`` — frame k's bytes are ``(k + 1) * MS`` ms later (each frame waits MS more than
  the one before); reads are split where frames start.
- ``delay-headers=S`` — the headers and everything after them are S seconds later.
- ``http=CODE[:retry-after=R]`` — the response is replaced: status CODE, ``content-type:
  application/json``, ``retry-after: R`` if given, ``content-length``, the dialect's error body
  in one write when the recorded headers were due, a clean close. Body faults of the same
  request are recorded as not applied.
- ``merge-reads`` — the whole body in one write, when its last write was due;
  ``split-reads`` — every byte in a write of its own, at its read's time.

The order is fixed: ``http``, the ending fault (cut, error, drop-terminal), ``garble``,
``stall``, ``slow``, ``delay-headers``, then ``merge-reads``/``split-reads``. A fault that
cannot apply (frame 30 of a 12-frame body, a terminal the body never had, a frame the cut
never reached) leaves the playback as it was and says why. When the body's length changed and
it ends with a clean close, a ``content-length`` header is set to the new length.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace

from streamscope.core.faults.frames import BodyFrames, body_frames
from streamscope.core.faults.playback import AppliedFault, End, Playback, Write
from streamscope.core.faults.shapes import (
    error_frame,
    garble_edit,
    http_error_body,
    status_message,
)
from streamscope.core.faults.spec import Fault, FaultSpec

__all__ = ["apply"]

_BODY_KINDS = frozenset({"cut", "error", "drop-terminal", "garble", "stall", "slow"})


@dataclass(slots=True)
class _Piece:
    """Part of a write: ``origin`` is the write it came from, ``frame`` the frame it belongs to
    (pieces never span frames), ``offset`` where it was in the original body."""

    at: float
    origin: int
    frame: int
    offset: int
    data: bytes


@dataclass(slots=True)
class _State:
    pieces: list[_Piece]
    end: End
    end_at: float | None
    headers_at: float


def apply(
    spec: FaultSpec,
    playback: Playback,
    dialect: str,
    request_number: int,
    *,
    frames: BodyFrames | None = None,
) -> Playback:
    """``playback`` with the faults of ``spec`` that take request ``request_number`` (counted
    from 1) applied; its ``faults`` say what each did. ``dialect`` is a registered name or
    ``auto``; ``frames`` may pass the body's frames when the caller keeps them (a server
    answering many requests from one recording), else they are found here."""
    faults = spec.for_request(request_number)
    if not faults:
        return replace(playback, faults=())
    done: dict[Fault, AppliedFault] = {}
    marks: dict[Fault, tuple[_Piece, float]] = {}  # the piece whose final time is "at", minus
    http = next((f for f in faults if f.kind == "http"), None)
    body = playback.body
    state = _State([], playback.end, playback.end_at, playback.headers_at)
    status, headers = playback.status, playback.headers
    if http is not None:
        status, headers, state, done[http] = _http(http, playback, dialect)
        for fault in faults:
            if fault.kind in _BODY_KINDS:
                done[fault] = _skip(fault, f"the response was replaced by {http.label}")
    elif any(f.kind in _BODY_KINDS for f in faults):
        if frames is None:
            frames = body_frames(body, dialect, playback.header("content-type"))
        state.pieces = _pieces(playback.writes, frames, _split_points(faults, frames))
        for kind in ("cut", "error", "drop-terminal", "garble", "stall", "slow"):
            for fault in (f for f in faults if f.kind == kind):
                done[fault], mark = _body_fault(fault, state, frames)
                if mark is not None:
                    marks[fault] = mark
    else:
        state.pieces = [_Piece(w.at, i, 0, 0, w.data) for i, w in enumerate(playback.writes)]
    for fault in (f for f in faults if f.kind == "delay-headers"):
        done[fault] = _delay_headers(fault, state)
    if http is not None:
        done[http] = replace(done[http], at=state.headers_at)
    for fault, (piece, minus) in marks.items():
        done[fault] = replace(done[fault], at=piece.at - minus)
    writes = _merged(state.pieces)
    for fault in (f for f in faults if f.kind in ("merge-reads", "split-reads")):
        writes, done[fault] = _shape(fault, writes)
    new_length = sum(len(w.data) for w in writes)
    if http is None and new_length != len(body) and state.end == "close":
        headers = _with_length(headers, new_length)
    return Playback(
        status=status,
        headers=headers,
        writes=tuple(writes),
        end=state.end,
        headers_at=state.headers_at,
        end_at=state.end_at,
        faults=tuple(done[f] for f in faults),
        dialect=playback.dialect,
    )


def _skip(fault: Fault, why: str) -> AppliedFault:
    return AppliedFault(fault, False, why=why)


def _http(
    fault: Fault, playback: Playback, dialect: str
) -> tuple[int, tuple[tuple[str, str], ...], _State, AppliedFault]:
    assert fault.status is not None
    name = dialect
    if name == "auto":
        name = body_frames(playback.body, "auto", playback.header("content-type")).dialect
    message = f"{status_message(fault.status)} (injected by StreamScope: {fault.label})"
    data = http_error_body(name, fault.status, message)
    headers = [("content-type", "application/json"), ("content-length", str(len(data)))]
    if fault.retry_after is not None:
        headers.append(("retry-after", str(fault.retry_after)))
    at = playback.headers_at
    state = _State([_Piece(at, 0, 0, 0, data)], "close", None, at)
    detail = (("status", fault.status), ("retry_after", fault.retry_after))
    return (
        fault.status,
        tuple(headers),
        state,
        AppliedFault(fault, True, None, None, at, None, detail),
    )


def _split_points(faults: tuple[Fault, ...], frames: BodyFrames) -> list[int] | None:
    """Where the writes must be cut before the body faults run: where the frames that garble
    and stall name start and end; ``None``: at every frame (slow)."""
    if any(f.kind == "slow" for f in faults):
        return None
    points: list[int] = []
    for f in faults:  # (the ending faults cut where they strike themselves)
        if f.frame is not None and f.frame < len(frames) and f.kind in ("garble", "stall"):
            points += (frames.starts[f.frame], frames.end(f.frame))
    return sorted(set(points))


def _pieces(
    writes: tuple[Write, ...], frames: BodyFrames, points: list[int] | None
) -> list[_Piece]:
    """The writes cut at ``points`` (``None``: where each frame starts), each piece labelled
    with the frame its first byte belongs to. Cutting only where needed keeps a fault on a
    recording of a million frames to a few pieces."""
    cuts = frames.starts if points is None else points
    pieces: list[_Piece] = []
    offset = 0
    for origin, (at, data) in enumerate(writes):
        end = offset + len(data)
        pos = offset
        k = bisect.bisect_right(cuts, offset)
        while k < len(cuts) and cuts[k] < end:
            pieces.append(_Piece(at, origin, 0, pos, data[pos - offset : cuts[k] - offset]))
            pos = cuts[k]
            k += 1
        if pos < end:
            pieces.append(_Piece(at, origin, 0, pos, data[pos - offset :]))
        offset = end
    for p in pieces:
        p.frame = frames.frame_at(p.offset)
    return pieces


def _split(pieces: list[_Piece], offset: int, frames: BodyFrames) -> int:
    """Make a piece start at body ``offset``; return its index (``len``: past the end)."""
    for i, p in enumerate(pieces):
        if p.offset == offset:
            return i
        if p.offset < offset < p.offset + len(p.data):
            cut = offset - p.offset
            pieces[i : i + 1] = [
                replace(p, data=p.data[:cut]),
                replace(p, offset=offset, frame=frames.frame_at(offset), data=p.data[cut:]),
            ]
            return i + 1
    return len(pieces)


def _first_of(pieces: list[_Piece], frame: int) -> int:
    return next((i for i, p in enumerate(pieces) if p.frame >= frame), len(pieces))


_Result = tuple[AppliedFault, tuple[_Piece, float] | None]


def _body_fault(fault: Fault, state: _State, frames: BodyFrames) -> _Result:
    """Apply one body fault; return its record and the piece whose final time (less a
    number of seconds) is when it took effect."""
    pieces = state.pieces
    n = fault.frame
    if n is not None and n >= len(frames):
        return _skip(fault, f"the body has {len(frames)} frames"), None
    match fault.kind:
        case "cut" | "drop-terminal" | "error":
            return _end_early(fault, state, frames)
        case "garble":
            assert n is not None and fault.garble is not None
            return _garble(fault, n, fault.garble, state, frames)
        case "stall":
            assert n is not None and fault.seconds is not None
            i = _first_of(pieces, n)
            if i == len(pieces):
                return _skip(fault, f"the stream ends before frame {n}"), None
            for p in pieces[i:]:
                p.at += fault.seconds
            if state.end_at is not None:
                state.end_at += fault.seconds
            detail = (("seconds", fault.seconds),)
            record = AppliedFault(fault, True, n, frames.starts[n], None, None, detail)
            return record, (pieces[i], fault.seconds)
    assert fault.kind == "slow" and fault.ms is not None
    if not pieces:
        return _skip(fault, "the body is empty"), None
    step = fault.ms / 1000
    for p in pieces:
        p.at += (p.frame + 1) * step
    if state.end_at is not None:
        state.end_at += (pieces[-1].frame + 1) * step
    return AppliedFault(fault, True, None, None, None, None, (("ms", fault.ms),)), None


def _end_early(fault: Fault, state: _State, frames: BodyFrames) -> _Result:
    """cut, error, drop-terminal: what follows the fault's offset is not sent. An empty piece
    stays where the first byte not sent was (it moves with stalls and slowness, and says
    when the fault struck)."""
    pieces = state.pieces
    size = frames.size
    detail: tuple[tuple[str, object], ...] = ()
    if fault.kind == "cut" and fault.byte is not None:
        offset = fault.byte
        if offset >= size:
            return _skip(fault, f"the body has {size} bytes"), None
    elif fault.kind == "cut":
        assert fault.frame is not None
        offset = frames.starts[fault.frame] + max(1, len(frames.raws[fault.frame]) // 2)
    elif fault.kind == "error":
        assert fault.frame is not None
        offset = frames.starts[fault.frame]
    else:
        if frames.terminal is None:
            return _skip(fault, f"the body has no terminal signal ({frames.dialect})"), None
        offset = frames.starts[frames.terminal]
        detail = (("signal", frames.terminal_signal),)
    i = _split(pieces, offset, frames)
    if i == len(pieces):
        return _skip(fault, f"the recorded writes end before byte {offset}"), None
    first = pieces[i]
    frame = first.frame
    data = b""
    if fault.kind == "error":
        data = error_frame(frames, frame, f"injected by StreamScope: {fault.label}")
    mark = _Piece(first.at, first.origin, frame, offset, data)
    pieces[i:] = [mark]
    state.end = "cut" if fault.kind == "cut" else "close"
    state.end_at = mark.at if fault.kind == "drop-terminal" else None
    return AppliedFault(fault, True, frame, offset, None, None, detail), (mark, 0.0)


def _garble(fault: Fault, n: int, how: str, state: _State, frames: BodyFrames) -> _Result:
    pieces = state.pieces
    mine = [p for p in pieces if p.frame == n]
    if b"".join(p.data for p in mine) != frames.raws[n]:
        return _skip(fault, f"frame {n} is not sent whole"), None
    edit = garble_edit(frames.raws[n], frames.framing, "utf8" if how == "utf8" else "json")
    if edit is None:
        return _skip(fault, f"frame {n} carries no data (a comment or blank lines)"), None
    start, stop, data = edit
    a, b = frames.starts[n] + start, frames.starts[n] + stop
    i = _split(pieces, a, frames)
    j = _split(pieces, b, frames) if b > a else i
    mark = _Piece(pieces[i].at, pieces[i].origin, n, a, data)
    pieces[i:j] = [mark]
    return AppliedFault(fault, True, n, a, None, None, (("garble", how),)), (mark, 0.0)


def _delay_headers(fault: Fault, state: _State) -> AppliedFault:
    assert fault.seconds is not None
    at = state.headers_at
    state.headers_at += fault.seconds
    for p in state.pieces:
        p.at += fault.seconds
    if state.end_at is not None:
        state.end_at += fault.seconds
    return AppliedFault(fault, True, None, None, at, None, (("seconds", fault.seconds),))


def _merged(pieces: list[_Piece]) -> list[Write]:
    """Pieces back into writes: neighbours of one original write, still due together, join."""
    writes: list[Write] = []
    last: _Piece | None = None
    for p in pieces:
        if not p.data:
            continue
        if last is not None and p.origin == last.origin and p.at == last.at and writes:
            writes[-1] = Write(p.at, writes[-1].data + p.data)
        else:
            writes.append(Write(p.at, p.data))
        last = p
    return writes


def _shape(fault: Fault, writes: list[Write]) -> tuple[list[Write], AppliedFault]:
    if not writes:
        return writes, _skip(fault, "the body is empty")
    count = (("writes", len(writes)),)
    if fault.kind == "merge-reads":
        at = writes[-1].at
        merged = [Write(at, b"".join(w.data for w in writes))]
        return merged, AppliedFault(fault, True, None, None, at, None, count)
    split = [Write(w.at, w.data[i : i + 1]) for w in writes for i in range(len(w.data))]
    return split, AppliedFault(fault, True, None, None, writes[0].at, None, count)


def _with_length(headers: tuple[tuple[str, str], ...], length: int) -> tuple[tuple[str, str], ...]:
    return tuple((k, str(length)) if k.lower() == "content-length" else (k, v) for k, v in headers)
