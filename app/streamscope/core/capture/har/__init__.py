"""HAR in and out: the LLM exchanges of a browser's HAR file as captures, and any capture as
a HAR 1.2 file.

**Import** (:func:`har_exchanges`, :func:`import_har`): a HAR 1.2 file as Chrome, Firefox or
Safari developer tools save it. An entry is an LLM exchange when it is a ``POST`` to a path a
dialect answers (``/chat/completions``, ``/messages``, ``/responses``, ``/api/chat``,
``:streamGenerateContent`` …) or its response is ``text/event-stream`` or NDJSON; everything
else (pages, scripts, images, telemetry, entries served from the browser cache — Chrome's
``_fromCache``, Safari's ``_fetchType``) is skipped with a reason. The response body is
``content.text`` (``content.encoding == "base64"`` decoded); browsers store it decompressed,
so ``content.size`` (decoded) is what it must measure — ``bodySize`` is the compressed
transfer. A body shorter than ``content.size`` (Firefox cuts long ones) is a capture ending
``broken``. Timings may be missing or ``-1``: the headers arrive after ``blocked + dns +
connect + send + wait`` (what is known), the stream ends ``receive`` later (else at
``time``); the body is one read when the headers arrive, unless the entry carries
StreamScope's own ``_streamscope`` record (an exported capture), whose read times and sizes
are restored.

Secrets never reach a file: the request's ``Authorization``/``x-api-key``/``Cookie`` headers,
key query parameters and cookies go through :class:`~streamscope.core.redact.Scrubber`, which
then masks every echo of them in bodies and response headers.

Each exchange's outcome is decided by replaying its capture through the same pipeline as any
capture (:func:`~streamscope.core.capture.replay.replay_capture`): there is no second parser.

**Export** (:func:`capture_to_har`): HAR 1.2 with one entry per capture: the stream body as
``response.content.text`` (base64 with ``encoding: "base64"`` when it is not UTF-8, so a
HAR → capture → HAR round trip keeps it byte-exact), timings from the capture (``send`` 0,
``wait`` until the headers, ``receive`` until the end) and a ``_streamscope`` record (read
times and sizes, how the stream ended) that a re-import restores.
"""

from streamscope.core.capture.har.build import (
    HarExchange,
    HarImport,
    ImportedExchange,
    decide,
    har_exchanges,
    import_har,
)
from streamscope.core.capture.har.read import (
    HAR_SUFFIX,
    HarError,
    HarSkip,
    is_har,
    read_har,
)
from streamscope.core.capture.har.write import capture_to_har, dump_har, har_entry

__all__ = [
    "HAR_SUFFIX",
    "HarError",
    "HarExchange",
    "HarImport",
    "HarSkip",
    "ImportedExchange",
    "capture_to_har",
    "decide",
    "dump_har",
    "har_entry",
    "har_exchanges",
    "import_har",
    "is_har",
    "read_har",
]
