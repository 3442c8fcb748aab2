"""Logging set-up: a rotating file in the platform's log folder plus stderr.

Log lines follow one convention: ``>`` sent, ``<`` received, ``=`` state change,
``!`` error. Secrets are never formatted into messages.

Third-party libraries are another matter: with ``-v`` botocore logs whole requests and
responses (session tokens in headers, request signatures, credentials in STS/SSO
answers, container environments). So every line that reaches a handler is scrubbed
twice: of the exact secrets registered with :data:`REDACTOR` (AWS keys, the engine's
token), and of anything that *looks* like a credential (:data:`PATTERNS`). Log files
are created ``0600`` in a folder created ``0700``, rotated files included.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
import threading
from pathlib import Path

import platformdirs

from captioner.settings import APP_NAME, PRIVATE_DIR, PRIVATE_FILE

MASK = "***"

# A name that holds a secret: …token, …secret, …password, …api_key, …signature, the AWS
# secret key (not "…tokens": usage counts stay readable).
# The look-behind starts a match only where a name starts: without it every position inside
# a long run of letters started a scan of the rest of the run (quadratic; seconds a line).
_SECRET_NAME = (r"(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*"
                r"(?:token|secret|password|passwd|api[_-]?key|signature"
                r"|secret[_-]?access[_-]?key|private[_-]?key)")
PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # 'X-Amz-Security-Token': b'…'   "sessionToken": "…"   HF_TOKEN=…   Signature=…
    # aws_secret_access_key = …   x-amz-security-token:…
    (re.compile(rf"""(?i)(["']?{_SECRET_NAME}["']?\s*[:=]\s*b?["']?)(?!\*\*\*)"""
                r"""[^"'\s,;&}<>\])]+"""), rf"\g<1>{MASK}"),
    # <SessionToken>…</SessionToken>   <SecretAccessKey>…</SecretAccessKey> (STS answers)
    (re.compile(r"(?i)(<(?:[A-Za-z]*(?:Token|Secret|SecretAccessKey|Password))>)[^<]*(</)"),
     rf"\g<1>{MASK}\g<2>"),
    # Authorization: Bearer …
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+"), rf"\g<1>{MASK}"),
    # Hugging Face tokens wherever they appear
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}"), f"hf_{MASK}"),
)


def redact_patterns(text: str) -> str:
    """``text`` with every credential-looking value replaced by ``***``."""
    for pattern, replacement in PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class SecretRedactor(logging.Filter):
    """Replaces registered secrets and credential-looking values in log records; it sits
    on the handlers, so it covers every logger, present or future."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *secrets: str | None) -> None:
        with self._lock:
            self._secrets.update(s for s in secrets if s and len(s) >= 8)

    def scrub(self, text: str) -> str:
        with self._lock:
            secrets = list(self._secrets)
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return redact_patterns(text)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the handler's problem
            return True
        scrubbed = self.scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:  # tracebacks can quote secrets too
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        return True


_TRACEBACKS = logging.Formatter()


REDACTOR = SecretRedactor()


def log_dir() -> Path:
    override = os.environ.get("CAPTIONER_LOG_DIR")
    return Path(override) if override else Path(platformdirs.user_log_dir(APP_NAME))


def private_file(path: Path) -> None:
    """Create ``path`` if missing, readable by its owner only (existing ones made so)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE))
    os.chmod(path, PRIVATE_FILE)


def _rotate_privately(source: str, dest: str) -> None:
    """The file handler's rotator: rename, then create the new file ``0600`` (the handler
    reopens it in append mode, so its mode stays)."""
    if os.path.exists(source):
        os.replace(source, dest)
    private_file(Path(source))


def setup_logging(verbosity: int = 0, *, to_file: bool = True) -> Path | None:
    """Configure the root logger once; returns the log file path (None if unwritable)."""
    root = logging.getLogger()
    if getattr(root, "_captioner_configured", False):
        return getattr(root, "_captioner_file", None)
    # Debug lines are written only with -v; below it none are even made (the websockets
    # library makes one for every frame sent or received: two per 80 ms of audio).
    root.setLevel(logging.DEBUG if verbosity else logging.INFO)
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
            directory.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
            if "CAPTIONER_LOG_DIR" not in os.environ:  # our own folder: private even if old
                os.chmod(directory, PRIVATE_DIR)
            path = directory / "captioner.log"
            for old in directory.glob("captioner.log*"):
                os.chmod(old, PRIVATE_FILE)  # written by an older version, world-readable
            private_file(path)
            handler = logging.handlers.RotatingFileHandler(
                path, maxBytes=2_000_000, backupCount=3, encoding="utf-8"
            )
            handler.rotator = _rotate_privately
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
