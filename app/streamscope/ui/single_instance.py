"""One running StreamScope per profile: a second start brings the first to the front.

The lock (a QLockFile in the profile folder) is what crash recovery relies on: only the
instance holding it may mark another run's "streaming" turns as truncated.
"""

from __future__ import annotations

import hashlib

from PySide6.QtCore import QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from streamscope.core import paths


def _server_name() -> str:
    digest = hashlib.sha1(str(paths.home().resolve()).encode()).hexdigest()[:16]
    return f"streamscope-{digest}"


class SingleInstance(QObject):
    """``acquire()`` is True for the first instance; later ones ask it to raise its window."""

    raiseRequested = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        paths.home().mkdir(parents=True, exist_ok=True)
        self._lock = QLockFile(str(paths.home() / "instance.lock"))
        self._lock.setStaleLockTime(0)
        self._server: QLocalServer | None = None

    def acquire(self) -> bool:
        if not self._lock.tryLock(200):
            self._notify_first()
            return False
        name = _server_name()
        QLocalServer.removeServer(name)  # a stale socket from a crashed run
        self._server = QLocalServer(self)
        self._server.newConnection.connect(self._on_server_new_connection)
        self._server.listen(name)
        return True

    def release(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        self._lock.unlock()

    def _notify_first(self) -> None:
        socket = QLocalSocket()
        socket.connectToServer(_server_name())
        if socket.waitForConnected(1000):
            socket.write(b"raise\n")
            socket.waitForBytesWritten(1000)
            socket.disconnectFromServer()

    def _on_server_new_connection(self) -> None:
        assert self._server is not None
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            socket.readyRead.connect(lambda s=socket: self._on_socket_ready(s))

    def _on_socket_ready(self, socket: QLocalSocket) -> None:
        if bytes(socket.readAll().data()).startswith(b"raise"):
            self.raiseRequested.emit()
        socket.disconnectFromServer()
