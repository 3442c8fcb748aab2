"""`captioner say`: speak typed text through the TTS endpoint, else the computer's voice."""

from __future__ import annotations

import argparse
import asyncio
import sys

from captioner import settings as settings_mod
from captioner.audio.playback import PlaybackError, Player, WavSink, list_output_devices
from captioner.tts.connect import tts_connector
from captioner.tts.errors import InvalidRequest
from captioner.tts.events import LANGUAGES, VOICES, SessionConfig
from captioner.tts.fallback import find_local_voice
from captioner.tts.speaker import Speaker, SpeakerState, SpeakerStatus


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("say", help="speak text (Qwen3-TTS endpoint, else the computer's voice)")
    p.add_argument("text", nargs="*", help="what to say; '-' or nothing reads standard input")
    p.add_argument("--endpoint", metavar="URL",
                   help="ws://HOST/v1/audio/speech/stream, wss://…, or sagemaker://ENDPOINT?"
                        "region=REGION; empty: the computer's voice (default: from settings)")
    p.add_argument("--voice", choices=VOICES, help="Qwen3-TTS voice (default: from settings)")
    p.add_argument("--language", choices=LANGUAGES, help="language (default: from settings)")
    p.add_argument("--output-device", metavar="NAME|INDEX", help="where to play it")
    p.add_argument("--wav", metavar="PATH", help="write the audio to a WAV file instead")
    p.add_argument("--list-voices", action="store_true", help="list voices and languages")
    p.add_argument("--list-devices", action="store_true", help="list audio outputs")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.list_voices:
        print("voices:    " + " ".join(VOICES))
        print("languages: " + " ".join(LANGUAGES))
        return 0
    if args.list_devices:
        try:
            for dev in list_output_devices():
                print(f"{dev.index:3d}  {dev.name}  ({dev.hostapi}, {dev.default_samplerate:g} Hz)")
        except PlaybackError as exc:
            print(f"captioner: {exc}", file=sys.stderr)
            return 1
        return 0
    text = " ".join(args.text).strip()
    if not text or text == "-":
        text = sys.stdin.read().strip()
    if not text:
        print("captioner: nothing to say", file=sys.stderr)
        return 2
    tts = settings_mod.load().tts
    endpoint = tts.endpoint if args.endpoint is None else args.endpoint
    try:
        config = SessionConfig(voice=args.voice or tts.voice,
                               language=args.language or tts.language)
        connector = tts_connector(endpoint)
    except (ValueError, InvalidRequest) as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 2
    output = args.output_device if args.output_device is not None else tts.output_device
    return asyncio.run(_say(text, connector, config, output, args.wav))


async def _say(text: str, connector, config: SessionConfig, output: str | None,
               wav: str | None) -> int:
    sink: Player | WavSink = WavSink(wav) if wav else Player(output)
    try:
        await sink.open()
    except PlaybackError as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 1
    try:
        speaker = Speaker(connector, sink, config,
                          local_voice=find_local_voice(sink, language=config.language),
                          on_status=_print_status)
        result = await speaker.speak(text)
    finally:
        await sink.close()
    return 0 if result.completed else 1


def _print_status(status: SpeakerStatus) -> None:
    if status.state is SpeakerState.ERROR or status.local_voice:
        print(f"captioner: {status.message}", file=sys.stderr)
