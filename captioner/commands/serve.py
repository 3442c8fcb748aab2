"""`captioner serve`: the local /v1/realtime server with the embedded engine."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from captioner import settings as settings_mod
from captioner.engine.access import check_bind
from captioner.engine.model_paths import EngineError
from captioner.engine.server import RealtimeServer

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run a vLLM-Realtime-compatible server on this computer")
    p.add_argument("--host", default="127.0.0.1",
                   help="loopback address to bind: 127.0.0.1 (default), ::1 or localhost")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--engine", choices=("whisper",), default="whisper")
    p.add_argument("--model-dir",
                   help="CTranslate2 Whisper model folder (default: the model chosen in "
                        "Settings → Recognition, bundled tiny.en unless changed)")
    p.add_argument("--threads", type=int,
                   help="CPU threads for encoding finished utterances and files "
                        "(live decodes and all decoding run on one)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from captioner.engine.whisper import WhisperEngine

    rec = settings_mod.load().recognition
    try:
        check_bind(args.host)
        engine = WhisperEngine(args.model_dir or rec.whisper_model_dir,
                               args.threads or rec.whisper_threads,
                               model=rec.whisper_model, language=rec.whisper_language)
    except EngineError as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(_serve(RealtimeServer(engine.new_transcriber, args.host, args.port)))


async def _serve(server: RealtimeServer) -> int:
    try:
        await server.start()
    except OSError as exc:
        print(f"captioner: cannot listen on {server.host}:{server.port}: {exc.strerror}",
              file=sys.stderr)
        return 1
    print(f"Realtime server on {server.url} (Ctrl+C to stop)", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()
    return 0
