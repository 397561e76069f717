"""One running StreamScope per profile: a second start brings the first to the front.

The lock (a QLockFile in the profile folder) is what crash recovery relies on: only the
instance holding it may mark another run's "streaming" turns as truncated.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QLockFile, QObject, Signal

from streamscope.core import paths

if TYPE_CHECKING:  # QtNetwork is loaded by listen(), after the window's first paint
    from PySide6.QtNetwork import QLocalServer, QLocalSocket


def _server_name() -> str:
    digest = hashlib.sha1(str(paths.home().resolve()).encode()).hexdigest()[:16]
    return f"streamscope-{digest}"


class SingleInstance(QObject):
    """``acquire()`` is True for the first instance, which then ``listen()``s; later ones ask
    it to raise its window."""

    raiseRequested = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        paths.home().mkdir(parents=True, exist_ok=True)
        self._lock = QLockFile(str(paths.home() / "instance.lock"))
        self._lock.setStaleLockTime(0)
        self._server: QLocalServer | None = None

    def acquire(self) -> bool:
        """Take the profile's lock; if another instance holds it, ask it to come forward."""
        if not self._lock.tryLock(200):
            self._notify_first()
            return False
        return True

    def listen(self) -> None:
        """Accept "raise" requests from later starts (call after ``acquire()``)."""
        from PySide6.QtNetwork import QLocalServer

        name = _server_name()
        QLocalServer.removeServer(name)  # a stale socket from a crashed run
        self._server = QLocalServer(self)
        self._server.newConnection.connect(self._on_server_new_connection)
        self._server.listen(name)

    def release(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._lock.unlock()

    def _notify_first(self, patience: float = 2.0) -> None:
        from PySide6.QtNetwork import QLocalSocket

        # The first instance listens a moment after it took the lock (once its window has
        # painted): keep trying for a while.
        deadline = time.monotonic() + patience
        while True:
            socket = QLocalSocket()
            socket.connectToServer(_server_name())
            if socket.waitForConnected(1000):
                socket.write(b"raise\n")
                socket.waitForBytesWritten(1000)
                socket.disconnectFromServer()
                return
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)

    def _on_server_new_connection(self) -> None:
        assert self._server is not None
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            socket.readyRead.connect(lambda s=socket: self._on_socket_ready(s))

    def _on_socket_ready(self, socket: QLocalSocket) -> None:
        if bytes(socket.readAll().data()).startswith(b"raise"):
            self.raiseRequested.emit()
        socket.disconnectFromServer()
