"""Shared test set-up. Fixtures live in tests/support/*; list each module here."""

import gc
import os

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
    """Run the cyclic collector on the main thread only, as the app does (MainThreadGc).

    A QObject in a Python reference cycle is freed by the cyclic collector on
    whatever thread triggers it (an executor, a log reader, the shortcut hook's
    listener); deleting a Qt object off its thread crashes Qt (a segfault seen in the
    full suite, never in one file alone). So automatic collection is off during each
    test and the test's garbage is collected here, on this thread, after it.
    """
    gc.disable()
    yield
    gc.collect()
    gc.disable()  # a test of MainThreadGc.stop() turns it back on
