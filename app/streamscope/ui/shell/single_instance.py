"""One running StreamScope per profile: a second start brings the first to the front, and
hands it the file it was started with (a double-clicked capture opens in the running window).

The lock (a QLockFile in the profile folder) is what crash recovery relies on: only the
instance holding it may mark another run's "streaming" turns as truncated.

The local socket (named from the profile folder, so per user and per profile, and only
accessible to the user) takes one request per line: ``raise`` or ``open <JSON string: an
absolute path>``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QLockFile, QObject, Signal

from streamscope.core import paths

if TYPE_CHECKING:  # QtNetwork is loaded by listen(), after the window's first paint
    from PySide6.QtNetwork import QLocalServer, QLocalSocket


def _server_name() -> str:
    import getpass  # (loaded after the window's first paint, like json below: only listen()
    import hashlib  # and a second start need them)

    key = f"{getpass.getuser()}\0{paths.home().resolve()}"  # per user and per profile
    digest = hashlib.sha1(key.encode()).hexdigest()[:16]
    return f"streamscope-{digest}"


class SingleInstance(QObject):
    """``acquire()`` is True for the first instance, which then ``listen()``s; later ones ask
    it to raise its window."""

    raiseRequested = Signal()
    openRequested = Signal(str)  # an absolute path another start was given

    MAX_REQUEST_BYTES = 64 * 1024  # a line longer than this is dropped with its connection

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        paths.home().mkdir(parents=True, exist_ok=True)
        self._lock = QLockFile(str(paths.home() / "instance.lock"))
        self._lock.setStaleLockTime(0)
        self._server: QLocalServer | None = None
        self.delivered = False

    def acquire(self, open_path: Path | None = None) -> bool:
        """Take the profile's lock; if another instance holds it, ask it to come forward
        (and to open ``open_path``; ``delivered`` then says whether it took the request)."""
        self.delivered = False
        if not self._lock.tryLock(200):
            self.delivered = self._notify_first(request_line(open_path))
            return False
        return True

    def listen(self) -> None:
        """Accept "raise" requests from later starts (call after ``acquire()``)."""
        from PySide6.QtNetwork import QLocalServer

        name = _server_name()
        QLocalServer.removeServer(name)  # a stale socket from a crashed run
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._on_server_new_connection)
        self._server.listen(name)

    def release(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._lock.unlock()

    def _notify_first(self, request: bytes, patience: float = 2.0) -> bool:
        from PySide6.QtNetwork import QLocalSocket

        # The first instance listens a moment after it took the lock (once its window has
        # painted): keep trying for a while.
        deadline = time.monotonic() + patience
        while True:
            socket = QLocalSocket()
            socket.connectToServer(_server_name())
            if socket.waitForConnected(1000):
                socket.write(request)
                written = socket.waitForBytesWritten(1000) or socket.bytesToWrite() == 0
                socket.disconnectFromServer()
                return written
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def _on_server_new_connection(self) -> None:
        assert self._server is not None
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            buffer = bytearray()
            socket.readyRead.connect(lambda s=socket, b=buffer: self._on_socket_ready(s, b))

    def _on_socket_ready(self, socket: QLocalSocket, buffer: bytearray) -> None:
        buffer += bytes(socket.readAll().data())
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            self._handle(line)
        if len(buffer) > self.MAX_REQUEST_BYTES:
            buffer.clear()
            socket.abort()

    def _handle(self, line: bytes) -> None:
        path = parse_open(line)
        if path is not None:
            self.openRequested.emit(path)
            self.raiseRequested.emit()
        elif line.strip() == b"raise":
            self.raiseRequested.emit()


def request_line(open_path: Path | None) -> bytes:
    """What a later start sends: ``raise``, or ``open "<absolute path>"`` (JSON: any name)."""
    if open_path is None:
        return b"raise\n"
    import json

    absolute = str(Path(open_path).expanduser().absolute())
    return b"open " + json.dumps(absolute).encode() + b"\n"


def parse_open(line: bytes) -> str | None:
    """The path of an ``open`` request line, or None for anything else (or a relative path)."""
    if not line.startswith(b"open "):
        return None
    import json

    try:
        path = json.loads(line[5:])
    except ValueError:
        return None
    if not isinstance(path, str) or not Path(path).is_absolute():
        return None
    return path
