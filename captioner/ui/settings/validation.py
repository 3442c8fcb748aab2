"""Validation of settings fields: plain functions returning a readable message or None.

No Qt here, so the same rules can serve the dialog, the CLI and the tests.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

ENDPOINT_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
ACCESS_KEY_ID = re.compile(r"^(AKIA|ASIA)[A-Z0-9]{12,124}$")
PROFILE = re.compile(r"^[A-Za-z0-9_.@+=,-]{1,64}$")


def ws_url_error(url: str) -> str | None:
    url = url.strip()
    if not url:
        return "Enter the server's WebSocket URL, e.g. ws://192.168.1.20:8000/v1/realtime."
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("ws", "wss"):
        return "The URL must start with ws:// or wss:// (e.g. wss://asr.example.com/v1/realtime)."
    if not parts.hostname:
        return "The URL has no host name (e.g. ws://127.0.0.1:8000/v1/realtime)."
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        return "The port in the URL is not a number between 1 and 65535."
    return None


def endpoint_name_error(name: str) -> str | None:
    name = name.strip()
    if not name:
        return "Enter the SageMaker endpoint name."
    if len(name) > 63:
        return "A SageMaker endpoint name has at most 63 characters."
    if not ENDPOINT_NAME.match(name):
        return ("A SageMaker endpoint name uses letters, digits and hyphens, and starts and "
                "ends with a letter or digit.")
    return None


def region_error(region: str) -> str | None:
    region = region.strip()
    if not region:
        return "Enter the AWS region, e.g. us-east-1."
    if not REGION.match(region):
        return f"“{region}” is not an AWS region name (like us-east-1 or eu-west-2)."
    return None


def profile_error(profile: str) -> str | None:
    if profile.strip() and not PROFILE.match(profile.strip()):
        return "An AWS profile name has no spaces (letters, digits and _.-@+=,)."
    return None


def access_keys_error(key_id: str, secret: str, *, stored: bool) -> str | None:
    """Both or neither; neither is fine only when keys are already stored."""
    key_id, secret = key_id.strip(), secret.strip()
    if not key_id and not secret:
        return None if stored else "Enter the access key ID and the secret access key."
    if not key_id or not secret:
        return "Enter both the access key ID and the secret access key."
    if not ACCESS_KEY_ID.match(key_id):
        return "An access key ID looks like AKIA… or ASIA… (capital letters and digits)."
    if len(secret) < 20:
        return (f"The secret access key is too short: this one has {len(secret)} characters, "
                "an AWS secret access key has 40.")
    return None


def model_error(model: str) -> str | None:
    if not model.strip():
        return ("Enter the model id the server serves "
                "(e.g. mistralai/Voxtral-Mini-4B-Realtime-2602).")
    if any(c.isspace() for c in model.strip()):
        return "A model id has no spaces."
    return None


def folder_error(folder: str) -> str | None:
    folder = folder.strip()
    if not folder:
        return "Choose a folder for transcripts."
    path = Path(folder).expanduser()
    if path.exists() and not path.is_dir():
        return f"{path} is a file, not a folder."
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not os.access(probe, os.W_OK):
        return f"Captioner cannot write to {probe}."
    return None


def _chord(seq: str) -> tuple[set[str], str]:
    """The modifiers and key of a shortcut's first chord: "Ctrl+Alt+C" → ({ctrl, alt}, C).
    The key itself may be "+" ("Ctrl++")."""
    chord = seq.strip().split(", ")[0]
    head, _, key = chord.rpartition("+")
    if not key and chord.endswith("+"):
        head, key = head.removesuffix("+"), "+"
    return {m.lower() for m in head.split("+") if m}, key


def shortcut_error(seq: str) -> str | None:
    """Why ``seq`` cannot be an app-wide shortcut: it would take a key that typing or moving
    around needs from every Captioner window. Empty (no shortcut) is fine."""
    if not seq.strip():
        return None
    modifiers, key = _chord(seq)
    if not modifiers & {"ctrl", "alt", "meta"}:
        return (f"{seq} is needed for typing or moving around, so it cannot be a shortcut: "
                "hold Ctrl or Alt with a key, e.g. Ctrl+Alt+R.")
    if modifiers == {"alt"} and len(key) == 1 and key.isalnum():
        return (f"{seq} moves to a field or button in Captioner's windows, so it cannot be "
                f"a shortcut: add Ctrl, e.g. Ctrl+{seq}.")
    return None


def shortcut_errors(shortcuts: dict[str, str],
                    labels: dict[str, str] | None = None) -> dict[str, str]:
    """name → message for each shortcut that is not allowed or is used twice; ``labels``
    name the commands in the messages (what the user sees, not "start_stop")."""
    errors = {name: e for name, seq in shortcuts.items()
              if (e := shortcut_error(seq)) is not None}
    return shortcut_conflicts(shortcuts, labels) | errors


def shortcut_conflicts(shortcuts: dict[str, str],
                       labels: dict[str, str] | None = None) -> dict[str, str]:
    """name → message for shortcuts that are used twice."""
    seen: dict[str, str] = {}
    errors: dict[str, str] = {}
    for name, seq in shortcuts.items():
        key = seq.strip().lower()
        if not key:
            continue
        if key in seen:
            used_by = (labels or {}).get(seen[key], seen[key])
            errors[name] = f"{seq} is already used for “{used_by}”."
        else:
            seen[key] = name
    return errors
