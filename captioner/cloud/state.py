"""What the cloud side remembers between runs: this installation's id and the regions used.

Kept apart from settings.json on purpose: the id is made once and must never change
(it is how the app recognises its own endpoints), and a settings window holding an
older copy of the settings must not be able to overwrite it. Nothing here is secret.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from captioner.settings import config_dir

log = logging.getLogger(__name__)

STATE_FILE = "cloud-state.json"
INSTALLATION_ID_BYTES = 8  # 16 hex characters; unique enough within one AWS account


@dataclass
class CloudState:
    installation_id: str
    regions_used: list[str] = field(default_factory=list)  # where orphans may be


def state_path() -> Path:
    return config_dir() / STATE_FILE


def load_state(path: Path | None = None) -> CloudState:
    """The remembered state; on first use (or an unreadable file) a new id is made and saved."""
    path = path or state_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        installation_id = str(data["installation_id"])
        regions = [str(r) for r in data.get("regions_used", []) if isinstance(r, str)]
        if installation_id:
            return CloudState(installation_id, regions)
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("! %s unreadable (%s); making a new installation id", path, exc)
    state = CloudState(secrets.token_hex(INSTALLATION_ID_BYTES))
    try:
        save_state(state, path)
    except OSError as exc:  # the next run makes another id: our endpoints then list as others'
        log.warning("! could not save %s (%s); the installation id is not kept", path, exc)
    log.info("= new installation id %s", state.installation_id)
    return state


def save_state(state: CloudState, path: Path | None = None) -> None:
    """Write atomically (temp file + rename)."""
    path = path or state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"installation_id": state.installation_id,
                       "regions_used": state.regions_used}, indent=2)
    fd, tmp = tempfile.mkstemp(prefix=".cloud-state-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remember_region(region: str, path: Path | None = None) -> CloudState:
    """Add ``region`` to the regions searched for orphans at start-up."""
    state = load_state(path)
    if region not in state.regions_used:
        state.regions_used.append(region)
        try:
            save_state(state, path)
        except OSError as exc:  # only the orphan search of later starts is narrower
            log.warning("! could not remember region %s in %s: %s", region, path, exc)
    return state


def deployed_before(path: Path | None = None) -> bool:
    """Whether this installation ever created an endpoint (from the app or the command
    line, whatever credentials it used): only then may one of ours still be running.
    Reads without making an id."""
    try:
        data = json.loads((path or state_path()).read_text(encoding="utf-8"))
        return bool(data.get("regions_used"))
    except (OSError, ValueError, AttributeError):
        return False
