import subprocess
import sys

from captioner.audio.files import FileSource
from captioner.transcript.journal import JournalError
from captioner.ui.app import CaptionerApp
from captioner.ui.controller import CaptionController
from captioner.ui.instance import SingleInstance
from tests.ui.conftest import WORDS, run_async, wait_until


def test_importing_the_app_has_no_side_effects():
    code = ("import sys; import captioner.ui.app as a; "
            "from PySide6.QtWidgets import QApplication; "
            "assert QApplication.instance() is None; assert sys.excepthook is sys.__excepthook__; "
            "assert callable(a.run_app)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_second_instance_asks_the_first_to_show_itself(qtbot, config_dir):
    first = SingleInstance()
    assert first.claim()
    second = SingleInstance()
    with qtbot.waitSignal(first.activated, timeout=5000):
        assert not second.claim()
    first.close()
    third = SingleInstance()
    assert third.claim()  # the name is free again
    third.close()


def test_full_disk_journal_is_a_notice_and_captions_go_on(qapp, store, realtime_server,
                                                          tone_wav):
    def full_disk(folder, header):
        raise JournalError("The disk holding /x is full: the transcript is not being saved.")

    async def scenario():
        store.settings.recognition.endpoint = realtime_server.url
        app = CaptionerApp(store, tray_available=False,
                           source_factory=lambda a: FileSource(tone_wav, chunk_bytes=2048,
                                                              realtime=True))
        app.controller._journal_factory = full_disk
        app.start()
        await wait_until(lambda: "full" in app.overlay.strip.notice_label.text(), 10,
                         "the notice")
        await wait_until(lambda: all(w in " ".join(line.text for line in app.controller.lines)
                                     for w in WORDS), 20, "the captions")
        assert not app.controller.current.failed
        await app.shutdown()

    run_async(qapp, scenario)


def test_changing_the_endpoint_restarts_the_running_session(qapp, store, realtime_server,
                                                            tone_wav):
    async def scenario():
        store.settings.recognition.endpoint = "ws://127.0.0.1:9/v1/realtime"  # refused
        app = CaptionerApp(store, tray_available=False,
                           source_factory=lambda a: FileSource(tone_wav, chunk_bytes=2048,
                                                              realtime=True))
        app.start()
        # a first connection that is refused is retried (bounded), with the wait shown
        await wait_until(lambda: " in " in app.overlay.strip.state_label.text(), 10,
                         "the retry countdown")  # "connecting in N s: …"
        assert app.controller.current.state in ("connecting", "reconnecting")
        new = store.copy()
        new.recognition.endpoint = realtime_server.url
        store.replace(new)
        await wait_until(lambda: app.controller.current.state == "listening", 15,
                         "listening on the new endpoint")
        assert app.overlay.strip.endpoint_label.text() == realtime_server.url
        await app.shutdown()

    run_async(qapp, scenario)


def test_controller_reports_a_bad_endpoint_setting(qapp, store):
    async def scenario():
        store.settings.recognition.endpoint = "http://nope"
        controller = CaptionController(store, source_factory=lambda a: None)
        controller.start()
        await wait_until(lambda: not controller.running, 5, "the run to end")
        assert controller.current.failed
        assert "Endpoint setting is wrong" in controller.current.text

    run_async(qapp, scenario)
