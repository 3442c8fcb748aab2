import gc
import threading
from typing import ClassVar

from PySide6.QtCore import QObject

from captioner.ui.main_thread_gc import MainThreadGc


class Cyclic(QObject):
    """A QObject kept alive only by a cycle through its own signal connection."""

    freed_on: ClassVar[list[str]] = []

    def __init__(self):
        super().__init__()
        self.destroyed.connect(lambda: None)
        self.me = self  # the cycle

    def __del__(self):
        Cyclic.freed_on.append(threading.current_thread().name)


def test_cycles_are_collected_by_the_timer_on_the_gui_thread(qtbot):
    collector = MainThreadGc()
    collector.start()
    try:
        assert not gc.isenabled()
        Cyclic()
        # another thread allocating a lot would have triggered collection there
        worker = threading.Thread(target=lambda: [[] for _ in range(200_000)], name="worker")
        worker.start()
        worker.join()
        assert Cyclic.freed_on == []  # not collected off the GUI thread
        qtbot.waitUntil(lambda: bool(Cyclic.freed_on), timeout=3000)
        assert Cyclic.freed_on == [threading.main_thread().name]
    finally:
        collector.stop()
    assert gc.isenabled()
