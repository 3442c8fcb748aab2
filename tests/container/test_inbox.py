"""The bridge's inbox is bounded: a backend slower than its client pushes back on the
client instead of the bridge buffering without end, and nothing is lost meanwhile."""

from __future__ import annotations

import asyncio
import json
import threading

from bridge.config import BridgeConfig
from bridge.relay import INBOX_FRAMES, Relay, new_inbox
from websockets.sync.client import connect

from tests.container.servers import WAIT, BridgeThread, ScriptedBackend


class EndlessClient:
    """The ASGI side of a client that sends frames as fast as they are taken."""

    def __init__(self, stop_at: int) -> None:
        self.taken = 0
        self.stop_at = stop_at
        self.reached = asyncio.Event()

    async def receive(self) -> dict:
        await asyncio.sleep(0)  # a real socket read yields to the loop
        self.taken += 1
        if self.taken >= self.stop_at:
            self.reached.set()
        return {"type": "websocket.receive", "text": f"frame {self.taken}"}


def test_the_reader_stops_taking_frames_while_the_inbox_is_full() -> None:
    async def scenario() -> tuple[int, int, int]:
        client = EndlessClient(stop_at=INBOX_FRAMES + 1)
        relay = Relay(client, "ws://127.0.0.1:9/unused")  # type: ignore[arg-type]
        inbox = new_inbox()
        reader = asyncio.create_task(relay._read_client(inbox))
        await asyncio.wait_for(client.reached.wait(), WAIT)
        for _ in range(100):  # let the reader run as far as it can
            await asyncio.sleep(0)
        full = client.taken
        first = await inbox.get()
        for _ in range(100):
            await asyncio.sleep(0)
        after_one = client.taken
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        return full, after_one, inbox.qsize() if first == "frame 1" else -1

    full, after_one, queued = asyncio.run(scenario())
    assert full == INBOX_FRAMES + 1  # 64 queued, one more taken and waiting for room
    assert after_one == full + 1  # one frame out, exactly one more in
    assert queued == INBOX_FRAMES


def test_a_stalled_backend_loses_nothing_once_it_reads_again() -> None:
    frames = [json.dumps({"type": "input_audio_buffer.append", "audio": f"{i:06d}" + "A" * 8000})
              for i in range(1500)]  # ~12 MB: far more than the inbox and socket buffers
    with ScriptedBackend(echo=False) as backend:
        backend.hold_reading()
        with BridgeThread(BridgeConfig(backend_url=backend.url)) as bridge, \
                connect(bridge.url(), open_timeout=WAIT) as ws:
            record = relay_all(ws, backend, frames)
    assert record.received == frames  # every frame, once, in order


def relay_all(ws, backend: ScriptedBackend, frames: list[str]):
    """Send ``frames`` while the backend reads nothing, let it read once the client has
    sent an inbox's worth (the buffers on the way always hold that much); its record."""
    progress = threading.Condition()
    count = [0]

    def send_all() -> None:
        for frame in frames:
            ws.send(frame)
            with progress:
                count[0] += 1
                progress.notify_all()

    sender = threading.Thread(target=send_all, daemon=True)
    sender.start()
    with progress:
        assert progress.wait_for(lambda: count[0] >= INBOX_FRAMES, WAIT)
    backend.release_reading()
    sender.join(60)
    assert not sender.is_alive(), "the client stayed blocked after the backend read again"
    ws.close()
    record = backend.connections[0]
    assert record.ended.wait(60)
    return record
