"""Shared test set-up. Fixtures live in tests/support/*; list each module here."""

import gc
import itertools
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
    never the user's cache (pytest keeps only its last few base folders); so does the
    config folder: a developer's own cloud state (an endpoint once deployed) would have
    every app in the suite look for endpoints in AWS, and a region remembered by a test
    would land in it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CAPTIONER_CACHE_DIR", str(tmp_path_factory.mktemp("user-cache")))
        mp.setenv("CAPTIONER_CONFIG_DIR", str(tmp_path_factory.mktemp("user-config")))
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
    # What a test made and dropped is still in the young generations (nothing
    # collected during it), so collecting those frees it; a full collection walks
    # every object of the session (~0.3 s each time: a third of the suite's time)
    # and is needed only for what long-lived fixtures drop, now and then.
    gc.collect(2 if next(_tests_done) % _FULL_COLLECTION_EVERY == 0 else 1)
    gc.disable()  # a test of MainThreadGc.stop() turns it back on


_FULL_COLLECTION_EVERY = 50
_tests_done = itertools.count(1)
