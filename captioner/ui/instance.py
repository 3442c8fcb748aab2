"""Single instance: a second launch asks the first to show itself, then exits 0.

The first instance listens on a QLocalServer whose name is derived from the user
and the config folder (so test runs with their own CAPTIONER_CONFIG_DIR do not
collide). A stale socket left by a crash is removed before listening.
"""

from __future__ import annotations

import getpass
import hashlib
import logging

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from captioner.settings import config_dir

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_MS = 500


def instance_name() -> str:
    digest = hashlib.sha1(f"{getpass.getuser()}|{config_dir()}".encode()).hexdigest()[:12]
    return f"captioner-{digest}"


class SingleInstance(QObject):
    activated = Signal()  # another launch asked us to come to the front

    def __init__(self, name: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name or instance_name()
        self.server: QLocalServer | None = None

    def claim(self) -> bool:
        """True if this process is the first instance (and now serves the name);
        False if another one runs (it has been asked to show itself)."""
        socket = QLocalSocket()
        socket.connectToServer(self.name)
        if socket.waitForConnected(CONNECT_TIMEOUT_MS):
            socket.write(b"activate\n")
            socket.waitForBytesWritten(CONNECT_TIMEOUT_MS)
            socket.disconnectFromServer()
            log.info("= another Captioner is running; asked it to show itself")
            return False
        QLocalServer.removeServer(self.name)
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not self.server.listen(self.name):
            log.warning("! single-instance server: %s", self.server.errorString())
            return True  # run anyway; a second instance is better than none
        self.server.newConnection.connect(self._on_connection)
        return True

    def _on_connection(self) -> None:
        """Any connection is a second launch: come to the front, then hang up."""
        assert self.server is not None
        while (conn := self.server.nextPendingConnection()) is not None:
            conn.abort()
            self.activated.emit()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
