"""What ``serve`` answers with: the recorded exchanges found under the paths it is given.

A path is a ``.sscap`` capture, a repro bundle (``.sscap.zip``), a HAR file (each of its LLM
exchanges) or a folder, searched recursively for those (hidden files and folders skipped), in
name order. Files are recognised by their content, as ``streamscope replay`` does. Anything
that cannot be served — a missing path, a damaged capture, a folder or HAR file with nothing
to serve, a capture without its request — raises :class:`ServeInputError`, one line naming
the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from streamscope.core.capture.bundle import is_bundle, read_repro_bundle
from streamscope.core.capture.format import Capture, is_capture, read_capture
from streamscope.core.capture.har import HAR_SUFFIX, har_exchanges, is_har, read_har
from streamscope.core.serve.playback import Playback, playback_of

__all__ = ["SERVED_SUFFIXES", "Recorded", "ServeInputError", "load_recordings"]

SERVED_SUFFIXES = (".sscap", ".zip", HAR_SUFFIX)
"""The file names a folder is searched for."""

_HEAD = 4096


class ServeInputError(ValueError):
    """A path ``serve`` cannot answer with (the message names it)."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """One recorded exchange, ready to serve. ``source``: the file it came from (a HAR
    entry as ``FILE#N``, N 1-based as in the file); ``path``: its request's URL path."""

    source: str
    capture: Capture
    method: str
    path: str
    playback: Playback

    @property
    def body(self) -> bytes:
        """The recorded request body."""
        return self.capture.request.body if self.capture.request is not None else b""

    def describe(self) -> str:
        return f"{self.method} {self.path} ({self.source})"


def load_recordings(paths: Sequence[str | Path]) -> list[Recorded]:
    """Every exchange under ``paths``, in the order given (see the module docstring)."""
    if not paths:
        raise ServeInputError("no capture given")
    found: list[Recorded] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = sorted(_files_in(path))
            if not files:
                raise ServeInputError(
                    f"{given}: no captures in this folder (.sscap, .sscap.zip or .har files)"
                )
            for file in files:
                found += _load_file(file)
        elif path.exists():
            found += _load_file(path)
        else:
            raise ServeInputError(f"{given}: no such file or folder")
    return found


def _files_in(folder: Path) -> Iterator[Path]:
    for path in folder.rglob("*"):
        hidden = any(part.startswith(".") for part in path.relative_to(folder).parts)
        if not hidden and path.is_file() and path.name.lower().endswith(SERVED_SUFFIXES):
            yield path


def _load_file(path: Path) -> list[Recorded]:
    try:
        with open(path, "rb") as fp:
            head = fp.read(_HEAD)
        if is_bundle(head):
            return [_recorded(str(path), read_repro_bundle(path))]
        if is_capture(head):
            return [_recorded(str(path), read_capture(path))]
        if path.name.lower().endswith(HAR_SUFFIX) or is_har(head):
            exchanges, _skipped = har_exchanges(read_har(path))
            if not exchanges:
                raise ServeInputError(f"{path}: no LLM exchange in this HAR file")
            return [_recorded(f"{path}#{ex.entry}", ex.capture) for ex in exchanges]
    except OSError as exc:
        raise ServeInputError(f"{path}: {exc.strerror or exc}") from None
    except ServeInputError:
        raise
    except ValueError as exc:  # CaptureError, HarError: each names the line or the part
        raise ServeInputError(f"{path}: {exc}") from None
    raise ServeInputError(f"{path}: not a capture (.sscap), repro bundle or HAR file")


def _recorded(source: str, capture: Capture) -> Recorded:
    if capture.request is None:
        raise ServeInputError(f"{source}: the capture has no recorded request to answer")
    parts = urlsplit(capture.request.url)
    return Recorded(
        source,
        capture,
        capture.request.method.upper(),
        parts.path or "/",
        playback_of(capture),
    )
