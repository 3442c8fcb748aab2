"""Client CPU per second of audio: SageMaker transport (SigV4 event signing + event-stream
framing over CRT HTTP/2) beside the WebSocket transport, same run, same backend.

Audio goes as Realtime ``input_audio_buffer.append`` events of 4 KB PCM (128 ms) at full
speed; the client reads every reply back. The backend answers each append as a Realtime
server does, with a short ``transcription.delta`` (``--backend echo`` sends every frame
back instead, which doubles the receive side). The fake SageMaker and the backend run in
a child process, so the figure is the client process's own CPU (its asyncio thread and
the CRT I/O thread). Target: ≤ 2 ms CPU per audio second.

The SDK's own share, measured in the same run: the same events through the SDK's
publisher (serialise, SigV4-sign, encode) into a writer that drops them, and the same
replies through the SDK's receiver (decode, check CRCs, deserialise) from memory. That
is work every client of ``aws-sdk-sagemaker-runtime-http2`` does per event before any
I/O; what is left of the total is CRT's TLS/HTTP2 thread, the hand-offs between it
and asyncio, and this module.

    .venv/bin/python bench/bench_transport.py [--seconds 120] [--backend delta|echo]
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


DELTA = '{"type":"transcription.delta","delta":" word"}'


def _servers(conn, backend: str) -> None:
    from tests.support.fake_sagemaker import FakeSageMaker
    from tests.support.sagemaker import EchoBackend

    reply = None if backend == "echo" else (lambda message: DELTA)
    with EchoBackend(reply) as echo, FakeSageMaker(echo.url) as fake:
        c = fake.credentials
        conn.send((echo.url, fake.endpoint_uri, fake.ca_file, fake.endpoint_name, fake.region,
                   c.access_key_id, c.secret_access_key))
        conn.recv()  # wait for "stop"


async def _pump(connect, frames: list[str]) -> tuple[float, float, float]:
    """(process CPU, wall, CPU of this thread: asyncio, the SDK's Python, our code)."""
    transport = await connect()
    await transport.send_text(frames[0])  # warm up
    await transport.recv()
    cpu, wall, own = time.process_time(), time.perf_counter(), time.thread_time()

    async def reader():
        for _ in frames:
            await transport.recv()

    task = asyncio.create_task(reader())
    for frame in frames:
        await transport.send_text(frame)
    await task
    own = time.thread_time() - own
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await transport.close()
    return cpu, wall, own


class _NullWriter:
    """Where the SDK-only figure's events go: nowhere."""

    async def write(self, data: bytes) -> None:
        pass


class _MemorySource:
    """Encoded reply events, read back as if from the network."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._pos = 0

    async def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size < 0 else self._pos + size
        chunk = bytes(self._data[self._pos:end])
        self._pos += len(chunk)
        return chunk


async def _sdk_only(connect, frames: list[str], reply: str) -> tuple[float, float]:
    """CPU seconds for the SDK's per-event work alone: (send side, receive side)."""
    from aws_sdk_sagemaker_runtime_http2.models import (
        RequestPayloadPart,
        RequestStreamEventPayloadPart,
    )
    from smithy_aws_event_stream.aio import AWSEventPublisher, AWSEventReceiver, SigningConfig
    from smithy_aws_event_stream.events import EventMessage

    transport = await connect()
    live, receiver = transport._publisher, transport._receiver  # the SDK's own objects
    config = live._signing_config
    signer = type(config.signer)(initial_signature=b"0" * 64,
                                 event_encoder_cls=config.signer._event_encoder_cls)
    publisher = AWSEventPublisher(
        live._serializer._payload_codec, _NullWriter(),
        SigningConfig(signer, config.signing_properties, config.identity_resolver,
                      config.identity_properties))
    message = EventMessage(headers={
        ":message-type": "event", ":event-type": "PayloadPart",
        ":content-type": "application/octet-stream", "DataType": "UTF8",
        "CompletionState": "COMPLETE"}, payload=reply.encode()).encode()
    source = _MemorySource(message * len(frames))
    decoder = AWSEventReceiver(receiver._payload_codec, source, receiver._deserializer)
    cpu = time.process_time()
    for frame in frames:
        await publisher.send(RequestStreamEventPayloadPart(value=RequestPayloadPart(
            bytes_=frame.encode(), data_type="UTF8", completion_state="COMPLETE")))
    send = time.process_time() - cpu
    cpu = time.process_time()
    for _ in frames:
        await decoder.receive()
    receive = time.process_time() - cpu
    await transport.close()
    return send, receive


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=120.0, help="audio seconds per run")
    parser.add_argument("--backend", choices=("delta", "echo"), default="delta",
                        help="reply to each append with a short delta, or echo it")
    args = parser.parse_args()
    n = int(args.seconds / AUDIO_SECONDS_PER_CHUNK)
    pcm = os.urandom(CHUNK)
    frames = [encode(AudioAppend(audio=pcm))] * n
    audio = n * AUDIO_SECONDS_PER_CHUNK

    parent, child = mp.Pipe()
    proc = mp.get_context("fork").Process(target=_servers, args=(child, args.backend), daemon=True)
    proc.start()
    ws_url, uri, ca_file, name, region, akid, secret = parent.recv()
    os.environ["SSL_CERT_FILE"] = ca_file
    from captioner.aws import AwsCredentials, StaticCredentials
    from captioner.transport.sagemaker import SageMakerTarget, sagemaker_connector
    from captioner.transport.websocket import websocket_connector

    sm = sagemaker_connector(SageMakerTarget(name, region, uri),
                             StaticCredentials(AwsCredentials(akid, secret)))
    ws = websocket_connector(ws_url)
    try:
        results = {}
        for label, connect in (("websocket", ws), ("sagemaker", sm), ("websocket", ws),
                               ("sagemaker", sm)):
            cpu, wall, own = asyncio.run(_pump(connect, frames))
            best = results.get(label)
            if best is None or cpu < best[0]:
                results[label] = (cpu, wall, own)
        reply = DELTA if args.backend == "delta" else frames[0]
        sdk = min((asyncio.run(_sdk_only(sm, frames, reply)) for _ in range(2)), key=sum)
    finally:
        parent.send("stop")
        proc.join(15)
    print(f"{n} chunks of {CHUNK} B = {audio:.0f} s of audio per run, "
          f"{args.backend} backend (best of 2)")
    for label, (cpu, wall, _own) in results.items():
        print(f"  {label:10s} client CPU {cpu * 1000 / audio:6.3f} ms per audio second "
              f"(wall {wall:.2f} s, {audio / wall:,.0f}× real time)")
    total, _, own = results["sagemaker"]
    print(f"    of which CRT's own I/O thread (TLS, HTTP/2): {(total - own) * 1000 / audio:.3f} "
          f"ms/s; the asyncio thread: {own * 1000 / audio:.3f} ms/s")
    print(f"    of which the SDK alone, no I/O: send {sdk[0] * 1000 / audio:.3f} "
          f"(serialise, sign, encode) + receive {sdk[1] * 1000 / audio:.3f} "
          f"(decode, deserialise) = {sum(sdk) * 1000 / audio:.3f} ms/s "
          f"({sum(sdk) / total:.0%} of the SageMaker figure)")
    ratio = results["sagemaker"][0] / results["websocket"][0]
    verdict = "OK" if results["sagemaker"][0] * 1000 / audio <= 2.0 else "ABOVE TARGET"
    print(f"  sagemaker / websocket CPU ratio: {ratio:.2f}; target ≤ 2 ms/s: {verdict}")


if __name__ == "__main__":
    main()
