"""Client CPU per second of audio: SageMaker transport (SigV4 event signing + event-stream
framing over CRT HTTP/2) beside the WebSocket transport, same run, same echo backend.

Audio goes as Realtime ``input_audio_buffer.append`` events of 4 KB PCM (128 ms) at full
speed; the backend echoes every frame, and the client reads them all back. The fake
SageMaker and the echo server run in a child process, so the figure is the client
process's own CPU (its asyncio thread and the CRT I/O thread). Target: ≤ 2 ms CPU per
audio second.

    .venv/bin/python bench/bench_transport.py [--seconds 120]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from captioner.realtime.events import AudioAppend, encode

CHUNK = 4096
AUDIO_SECONDS_PER_CHUNK = CHUNK / 2 / 16_000


def _servers(conn) -> None:
    from tests.support.fake_sagemaker import FakeSageMaker
    from tests.support.sagemaker import EchoBackend

    with EchoBackend() as echo, FakeSageMaker(echo.url) as fake:
        c = fake.credentials
        conn.send((echo.url, fake.endpoint_uri, fake.ca_file, fake.endpoint_name, fake.region,
                   c.access_key_id, c.secret_access_key))
        conn.recv()  # wait for "stop"


async def _pump(connect, frames: list[str]) -> tuple[float, float]:
    transport = await connect()
    await transport.send_text(frames[0])  # warm up
    await transport.recv()
    cpu, wall = time.process_time(), time.perf_counter()

    async def reader():
        for _ in frames:
            await transport.recv()

    task = asyncio.create_task(reader())
    for frame in frames:
        await transport.send_text(frame)
    await task
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await transport.close()
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0, help="audio seconds per run")
    args = parser.parse_args()
    n = int(args.seconds / AUDIO_SECONDS_PER_CHUNK)
    pcm = os.urandom(CHUNK)
    frames = [encode(AudioAppend(audio=pcm))] * n
    audio = n * AUDIO_SECONDS_PER_CHUNK

    parent, child = mp.Pipe()
    proc = mp.get_context("fork").Process(target=_servers, args=(child,), daemon=True)
    proc.start()
    ws_url, uri, ca_file, name, region, akid, secret = parent.recv()
    os.environ["SSL_CERT_FILE"] = ca_file
    from captioner.cloud.credentials import AwsCredentials, StaticCredentials
    from captioner.transport.sagemaker import SageMakerTarget, sagemaker_connector
    from captioner.transport.websocket import websocket_connector

    sm = sagemaker_connector(SageMakerTarget(name, region, uri),
                             StaticCredentials(AwsCredentials(akid, secret)))
    ws = websocket_connector(ws_url)
    try:
        results = {}
        for label, connect in (("websocket", ws), ("sagemaker", sm), ("websocket", ws),
                               ("sagemaker", sm)):
            cpu, wall = asyncio.run(_pump(connect, frames))
            best = results.get(label)
            if best is None or cpu < best[0]:
                results[label] = (cpu, wall)
    finally:
        parent.send("stop")
        proc.join(15)
    print(f"{n} chunks of {CHUNK} B = {audio:.0f} s of audio per run (best of 2)")
    for label, (cpu, wall) in results.items():
        print(f"  {label:10s} client CPU {cpu * 1000 / audio:6.3f} ms per audio second "
              f"(wall {wall:.2f} s, {audio / wall:,.0f}× real time)")
    ratio = results["sagemaker"][0] / results["websocket"][0]
    verdict = "OK" if results["sagemaker"][0] * 1000 / audio <= 2.0 else "ABOVE TARGET"
    print(f"  sagemaker / websocket CPU ratio: {ratio:.2f}; target ≤ 2 ms/s: {verdict}")


if __name__ == "__main__":
    main()
