"""Captioner: floating live captions of system audio and microphone."""

__version__ = "0.1.0"
