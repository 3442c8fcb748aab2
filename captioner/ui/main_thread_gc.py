"""Run Python's cyclic garbage collector on the GUI thread only.

A Qt object caught in a Python reference cycle (a widget whose signal is connected
to its own bound method, say) is freed by the cyclic collector, and the collector
runs on whichever thread happens to allocate at the wrong moment: an executor, a
PortAudio callback, the AWS CRT's I/O thread. Deleting a Qt object off its thread
crashes Qt. So the app turns automatic collection off and collects from a timer
on the GUI thread instead (young objects every second, everything every minute).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 1000
FULL_EVERY = 60


class MainThreadGc(QObject):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._ticks = 0
        self._timer = QTimer(self)
        self._timer.setInterval(INTERVAL_MS)
        self._timer.timeout.connect(self.collect)

    def start(self) -> None:
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        gc.enable()

    def collect(self) -> None:
        self._ticks += 1
        generation = 2 if self._ticks % FULL_EVERY == 0 else 0
        gc.collect(generation)
