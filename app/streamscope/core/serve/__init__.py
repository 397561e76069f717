"""Serve mode: recorded exchanges answered again, byte for byte and read for read, with
their timing — an endpoint to point a client's tests at (``streamscope serve``, the
``streamscope_serve`` pytest fixture, :func:`serve_captures`).

- :mod:`.library`: what is served: the captures, bundles and HAR files under the paths given.
- :mod:`.playback`: one recording as what the server does (:class:`~.playback.Playback`: the
  head, each write at its offset, and a clean end, a cut or a stall) — the hook for faults.
- :mod:`.matching`: which recording answers a request (in turn per path, or by request body),
  and the JSON error for a request that has none.
- :mod:`.exchange`: the HTTP/1.1 server (asyncio + h11): requests read, answers chosen.
- :mod:`.playing`: one playback carried out on a connection, write by write.
- :mod:`.report`: each exchange's line, judged from what was really sent.
- :mod:`.server`: running it in a thread or in the foreground; :func:`serve_captures`.

Serve comes after every stage but bench: it reads captures and judges what it sent with the
turn pipeline; nothing of the UI.
"""

from streamscope.core.serve.library import Recorded, ServeInputError, load_recordings
from streamscope.core.serve.matching import VOLATILE_FIELDS, Matcher, NoMatch
from streamscope.core.serve.playback import Playback, playback_of
from streamscope.core.serve.report import ServedExchange
from streamscope.core.serve.server import DEFAULT_PORT, ServeServer, serve_captures

__all__ = [
    "DEFAULT_PORT",
    "VOLATILE_FIELDS",
    "Matcher",
    "NoMatch",
    "Playback",
    "Recorded",
    "ServeInputError",
    "ServeServer",
    "ServedExchange",
    "load_recordings",
    "playback_of",
    "serve_captures",
]
