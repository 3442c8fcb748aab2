"""Shared test set-up. Fixtures live in tests/support/*; list each module here."""

import gc
import os
import sys

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

pytest_plugins: list[str] = [
    "tests.support.pulse",
    "tests.support.speech",
    "tests.support.transcribers",
    "tests.support.moto_server",
    "tests.support.memory_keyring",
    "tests.support.aws_account",
    "tests.support.omni_server",
    "tests.support.sagemaker",
    "tests.support.strict_speech",
]


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Model digests and the assembled multilingual model go to a temporary folder,
    never the user's cache (pytest keeps only its last few base folders)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CAPTIONER_CACHE_DIR", str(tmp_path_factory.mktemp("user-cache")))
        yield


@pytest.fixture(autouse=True)
def _collect_qt_garbage():
    """Collect reference cycles on the main thread after each test.

    A QObject in a Python reference cycle is freed by the cyclic collector on
    whatever thread triggers it (an executor, a log reader); deleting a Qt object
    off its thread crashes Qt. Collecting here makes that happen on this thread.
    """
    yield
    if "PySide6.QtCore" in sys.modules:
        gc.collect()
