"""Settings → Feed on a fresh profile: turn the caption page and a live file on, and a
real caption session's words reach both."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.request

from websockets.asyncio.client import connect

from captioner.audio.files import FileSource
from captioner.feed.outputs import file_paths
from captioner.ui.app import CaptionerApp
from tests.ui.conftest import WORDS, run_async, wait_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def test_feed_page_turned_on_in_settings_carries_the_live_captions(qapp, store,
                                                                   realtime_server, tone_wav):
    async def scenario():
        store.settings.recognition.endpoint = realtime_server.url
        app = CaptionerApp(store, tray_available=False,
                           source_factory=lambda a: FileSource(tone_wav, chunk_bytes=2048,
                                                              realtime=True))
        app.show_settings()
        dialog = app.settings_dialog
        page = dialog.feed
        dialog.tabs.setCurrentWidget(page)
        assert not page.web_page.isChecked() and not page.port.isEnabled(), "off by default"
        page.web_page.click()  # as a click or the space bar does
        page.port.setValue(_free_port())
        page.text_file.click()
        assert dialog.apply()
        url = page.url.text()
        assert url.startswith(f"http://127.0.0.1:{page.port.value()}/?token=")
        assert store.settings.feed.token and store.settings.feed.token in url
        await wait_until(lambda: app.feed.server is not None, 10, "the caption page")
        assert "Live captions" in await asyncio.to_thread(_get, url)
        socket_url = url.replace("http://", "ws://").replace("/?", "/ws?")
        async with connect(socket_url) as ws:
            assert json.loads(await ws.recv())["type"] == "snapshot"
            app.start()
            heard: list[str] = []
            while not all(w in " ".join(heard) for w in WORDS):
                message = json.loads(await asyncio.wait_for(ws.recv(), 20))
                heard += [line["text"] for line in message["final"]]
        text_file, _ = file_paths(store.settings.feed, store.settings.transcript.folder)
        written = text_file.read_text(encoding="utf-8")
        assert all(w in written for w in WORDS)
        await app.shutdown()
        assert app.feed.server is None

    run_async(qapp, scenario, timeout=60)


def test_an_untouched_feed_page_changes_nothing_and_default_paths_stay_default(qapp, tmp_path):
    """Its file paths show the defaults in full; applied unchanged, they stay "" (the
    transcript folder's files) instead of pinning today's folder into the settings."""
    import copy

    from captioner.settings import Settings
    from captioner.ui.settings.feed_page import FeedPage

    page = FeedPage()
    settings = Settings()
    settings.transcript.folder = str(tmp_path / "transcripts")
    page.load(settings)
    assert page.text_path.text() == str(tmp_path / "transcripts" / "live-captions.txt")
    out = copy.deepcopy(settings)
    assert page.write(out) == {}
    assert out.feed == settings.feed
    page.text_path.setText(str(tmp_path / "mine.txt"))
    page.write(out)
    assert (out.feed.text_path, out.feed.vtt_path) == (str(tmp_path / "mine.txt"), "")
