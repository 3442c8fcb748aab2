"""The first start says what is captioned, whatever the settings chose."""

from captioner.settings import Settings
from captioner.ui.first_run import first_run_hint


def test_the_hint_names_the_source_and_where_it_is_transcribed():
    settings = Settings()
    assert first_run_hint(settings).startswith(
        "Captioning what this computer plays, on this computer.")
    settings.audio.source, settings.audio.speakers = "both", True
    settings.audio.mic_label = "Ana"
    settings.recognition.endpoint = "ws://127.0.0.1:8000/v1/realtime"
    hint = first_run_hint(settings)
    assert "your microphone as “Ana” and what this computer plays as “Others”" in hint
    assert "with ws://127.0.0.1:8000/v1/realtime" in hint and "→ Settings" in hint
