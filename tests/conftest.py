"""Shared test set-up. Fixtures live in tests/support/*; list each module here."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

pytest_plugins: list[str] = [
    "tests.support.pulse",
    "tests.support.speech",
    "tests.support.transcribers",
    "tests.support.moto_server",
    "tests.support.omni_server",
    "tests.support.sagemaker",
]
