"""The hint shown over the captions on the very first start: what is captioned, where,
and where to change it (a newcomer must not have to guess what the app listens to)."""

from __future__ import annotations

from captioner.settings import Settings
from captioner.ui.controller import describe_endpoint

FIRST_RUN_HINT = ("Captioning {source}, {where}. "
                  "To change the source or the recognition endpoint: right-click here "
                  "(or use the tray icon) → Settings.")
HINT_SOURCES = {"system": "what this computer plays", "mic": "your microphone",
                "both": "your microphone and what this computer plays, mixed"}


def first_run_hint(settings: Settings) -> str:
    """What is being captioned, where, and how to change it (shown on the first start)."""
    audio = settings.audio
    if audio.two_streams:
        you, others = audio.labels()
        source = f"your microphone as “{you}” and what this computer plays as “{others}”"
    else:
        source = HINT_SOURCES.get(audio.source, audio.source)
    endpoint = describe_endpoint(settings.recognition.endpoint)
    where = "on this computer" if endpoint == "On this computer" else f"with {endpoint}"
    return FIRST_RUN_HINT.format(source=source, where=where)
