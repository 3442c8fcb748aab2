"""TTS test set-up: the PulseAudio fixture, until tests/conftest.py lists it globally."""

from tests.support.pulse import pulse  # noqa: F401  (fixture)
