"""A delta holding a lone surrogate ("\\ud800" is valid JSON) from a real server, through
the session, the caption model and overlay, the journal and the exports: captions go
on, the line is kept (U+FFFD where the broken character was), nothing raises."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from websockets.sync.server import Server, ServerConnection, serve

from captioner.audio.files import FileSource
from captioner.transcript.journal import read_journal
from captioner.ui.app import CaptionerApp
from tests.ui.conftest import run_async, wait_until

# Raw frames, escapes as a server would send them: two sentences, the first one broken.
DELTAS = ['{"type":"transcription.delta","delta":"Caf\\ud800 au lait is served here. "}',
          '{"type":"transcription.delta","delta":"The second line \\udc00follows it. "}']
DONE = ('{"type":"transcription.done","text":"","usage":'
        '{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}')


def _speak(ws: ServerConnection) -> None:
    ws.send(json.dumps({"type": "session.created", "id": "sess-surrogates", "created": 0}))
    generating = False
    for frame in ws:
        event = json.loads(frame)
        if event["type"] != "input_audio_buffer.commit":
            continue
        if not generating:
            generating = True
            for delta in DELTAS:
                ws.send(delta)
        if event.get("final"):
            ws.send(DONE)
            generating = False


@pytest.fixture
def surrogate_server() -> Iterator[Server]:
    with serve(_speak, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server
        server.shutdown()
        thread.join(10)


def test_lone_surrogates_from_a_server_reach_journal_and_exports(qapp, store, tone_wav,
                                                                 surrogate_server, tmp_path):
    port = surrogate_server.socket.getsockname()[1]
    store.settings.recognition.endpoint = f"ws://127.0.0.1:{port}/v1/realtime"

    async def scenario():
        app = CaptionerApp(store, tray_available=False,
                           source_factory=lambda a: FileSource(tone_wav, chunk_bytes=2048,
                                                               realtime=True))
        app.start()
        await wait_until(lambda: len(app.controller.lines) >= 2, 20, "both lines")
        app.overlay.view.grab()  # paints the broken line
        shown = app.overlay.view.visible_text()
        await wait_until(lambda: not app.controller.running, 20, "the end of the file")
        state, notice = app.controller.current.state, app.overlay.strip.notice_label.text()
        journal = app.history.current_journal
        exported: dict[str, str] = {}
        for fmt in ("txt", "srt", "vtt"):  # each in its thread, answered by a message
            app.history.message.connect(lambda text, fmt=fmt: exported.setdefault(fmt, text))
            app.history.export_to(tmp_path / f"out.{fmt}", fmt)
            await wait_until(lambda fmt=fmt: fmt in exported, 20, f"the {fmt} export")
        await app.shutdown()
        return shown, state, notice, journal, exported

    shown, state, notice, journal, exported = run_async(qapp, scenario, timeout=60)
    assert "au lait is served here." in shown and "follows it." in shown
    assert state == "idle" and notice == ""  # stopped normally; no journal problem
    contents = read_journal(journal)
    assert [line.text for line in contents.lines] == [
        "Caf\ufffd au lait is served here.", "The second line \ufffdfollows it."]
    assert contents.finished and contents.skipped == 0
    assert exported == {fmt: f"Saved {tmp_path / f'out.{fmt}'}." for fmt in ("txt", "srt", "vtt")}
    for fmt in exported:
        text = (tmp_path / f"out.{fmt}").read_text(encoding="utf-8")
        assert "Caf\ufffd au lait" in text and "\ufffdfollows" in text
