"""Logging set-up: a rotating file in the platform's log folder plus stderr.

Log lines follow one convention: ``>`` sent, ``<`` received, ``=`` state change,
``!`` error. Secrets are never formatted into messages.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import threading
from pathlib import Path

import platformdirs

from captioner.settings import APP_NAME


class SecretRedactor(logging.Filter):
    """Replaces known secret strings in log records; attach it to third-party loggers."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *secrets: str | None) -> None:
        with self._lock:
            self._secrets.update(s for s in secrets if s and len(s) >= 8)

    def scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if self._secrets:
            try:
                message = record.getMessage()
            except Exception:  # a broken record is the handler's problem
                return True
            scrubbed = self.scrub(message)
            if scrubbed != message:
                record.msg, record.args = scrubbed, None
        return True


REDACTOR = SecretRedactor()


def log_dir() -> Path:
    override = os.environ.get("CAPTIONER_LOG_DIR")
    return Path(override) if override else Path(platformdirs.user_log_dir(APP_NAME))


def setup_logging(verbosity: int = 0, *, to_file: bool = True) -> Path | None:
    """Configure the root logger once; returns the log file path (None if unwritable)."""
    root = logging.getLogger()
    if getattr(root, "_captioner_configured", False):
        return getattr(root, "_captioner_file", None)
    root.setLevel(logging.DEBUG)
    console = logging.StreamHandler()
    console.setLevel(logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1
                     else logging.DEBUG)
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    console.addFilter(REDACTOR)  # on handlers: it then covers every logger, present or future
    root.addHandler(console)
    path: Path | None = None
    if to_file:
        try:
            directory = log_dir()
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / "captioner.log"
            handler = logging.handlers.RotatingFileHandler(
                path, maxBytes=2_000_000, backupCount=3, encoding="utf-8"
            )
            handler.setLevel(logging.DEBUG if verbosity else logging.INFO)
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
            )
            handler.addFilter(REDACTOR)
            root.addHandler(handler)
        except OSError as exc:
            logging.getLogger(__name__).warning("! cannot write log file: %s", exc)
            path = None
    root._captioner_configured = True  # type: ignore[attr-defined]
    root._captioner_file = path  # type: ignore[attr-defined]
    return path
