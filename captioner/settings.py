"""The one typed settings object, loaded and saved in one place.

Secrets never live here: AWS keys go to the OS keyring (captioner.aws.credentials).
Unknown keys are ignored and wrongly typed values fall back to defaults with a
warning, so a hand-edited or older file never stops the app from starting.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import platformdirs

log = logging.getLogger(__name__)

APP_NAME = "Captioner"
DEFAULT_STT_MODEL = "mistralai/Voxtral-Mini-4B-Realtime-2602"

Source = Literal["mic", "system", "both"]


@dataclass
class AudioSettings:
    source: Source = "system"
    mic_device: str | None = None  # name or index as text; None = default
    system_device: str | None = None
    mic_gain: float = 1.0
    system_gain: float = 1.0
    chunk_bytes: int = 4096  # 128 ms of 16 kHz PCM16; see captioner.audio.chunker


@dataclass
class RecognitionSettings:
    # "embedded" | "ws://host/v1/realtime" | "wss://…" | "sagemaker://ENDPOINT?region=…&profile=…"
    endpoint: str = "embedded"
    model: str = DEFAULT_STT_MODEL
    whisper_model_dir: str | None = None  # None = the bundled tiny.en
    whisper_threads: int = 2
    rotate_after_seconds: float = 45 * 60.0
    stall_seconds: float = 15.0
    outage_buffer_seconds: float = 60.0


@dataclass
class AwsSettings:
    region: str = "us-east-1"
    profile: str | None = None  # None with use_keyring=False: boto3's default chain
    use_keyring: bool = False  # access keys kept in the OS keyring


@dataclass
class AppearanceSettings:
    font_family: str = "Sans Serif"
    font_size: int = 28
    lines: int = 2
    row_chars: int = 42  # longest caption row; rows break at phrase boundaries within it
    preset: str = "yellow-on-black"
    text_color: str = "#FFFF00"
    background_color: str = "#000000"
    background_opacity: float = 0.8
    outline: bool = True
    dock: Literal["top", "bottom", "floating"] = "bottom"
    linger_seconds: float = 8.0
    click_through: bool = False
    announce_lines: bool = False  # screen-reader announcement of finalized lines
    geometry: dict[str, list[int]] = field(default_factory=dict)  # screen name → x, y, w, h


@dataclass
class ShortcutSettings:
    start_stop: str = "Ctrl+Alt+C"
    click_through: str = "Ctrl+Alt+T"
    font_bigger: str = "Ctrl+Alt+="
    font_smaller: str = "Ctrl+Alt+-"
    reply: str = "Ctrl+Alt+R"
    # the reply shortcut also works while another app has focus (the hook sees every key)
    global_reply: bool = True


@dataclass
class TranscriptSettings:
    folder: str = field(
        default_factory=lambda: str(Path(platformdirs.user_documents_dir()) / APP_NAME)
    )


@dataclass
class TtsSettings:
    endpoint: str = ""  # "" = platform voice; ws(s)://… or sagemaker://…
    voice: str = "vivian"
    language: str = "English"
    output_device: str | None = None
    phrases: list[str] = field(default_factory=list)


@dataclass
class EndpointDeploySettings:
    """What `captioner endpoint deploy` and the Endpoints page need per kind."""

    image_uri: str = ""
    model_source: str = ""  # s3:// prefix or model id
    instance_types: list[str] = field(default_factory=list)  # ordered pool, 1–5
    role_arn: str = ""
    autoscale_min: int = 0  # 0 = autoscaling off
    autoscale_max: int = 1
    # preflight checks the user chose to go past because they cannot be read (e.g. the
    # quota without Service Quotas permission); a check that FAILS is never skipped
    accepted_unknown: list[str] = field(default_factory=list)
    max_lifetime_hours: float = 8.0  # the server deletes it then (renewed while in use); 0 = off


@dataclass
class CloudSettings:
    stt: EndpointDeploySettings = field(
        default_factory=lambda: EndpointDeploySettings(instance_types=["ml.g6.4xlarge"])
    )
    tts: EndpointDeploySettings = field(
        default_factory=lambda: EndpointDeploySettings(
            instance_types=["ml.g6.xlarge", "ml.g6e.xlarge", "ml.g5.xlarge", "ml.g4dn.xlarge"]
        )
    )
    idle_stop_minutes: int = 30


@dataclass
class Settings:
    audio: AudioSettings = field(default_factory=AudioSettings)
    recognition: RecognitionSettings = field(default_factory=RecognitionSettings)
    aws: AwsSettings = field(default_factory=AwsSettings)
    appearance: AppearanceSettings = field(default_factory=AppearanceSettings)
    alert_words: list[str] = field(default_factory=list)
    shortcuts: ShortcutSettings = field(default_factory=ShortcutSettings)
    transcript: TranscriptSettings = field(default_factory=TranscriptSettings)
    tts: TtsSettings = field(default_factory=TtsSettings)
    cloud: CloudSettings = field(default_factory=CloudSettings)
    first_run: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        return _build(cls, data, "")


def config_dir() -> Path:
    override = os.environ.get("CAPTIONER_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP_NAME))


def settings_path() -> Path:
    return config_dir() / "settings.json"


def load(path: Path | None = None) -> Settings:
    """Settings from disk, defaults when missing or unreadable (never raises)."""
    path = path or settings_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Settings()
    except (OSError, ValueError) as exc:
        log.warning("! settings file %s unreadable (%s); using defaults", path, exc)
        return Settings()
    if not isinstance(data, dict):
        log.warning("! settings file %s is not an object; using defaults", path)
        return Settings()
    return Settings.from_dict(data)


def save(settings: Settings, path: Path | None = None) -> None:
    """Write atomically (temp file + rename) so a crash never leaves half a file."""
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(settings.to_dict(), indent=2, sort_keys=True)
    fd, tmp = tempfile.mkstemp(prefix=".settings-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _build(cls: type, data: dict[str, Any], prefix: str) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value, hint = data[f.name], hints[f.name]
        if dataclasses.is_dataclass(hint):
            if isinstance(value, dict):
                kwargs[f.name] = _build(hint, value, f"{prefix}{f.name}.")
            else:
                log.warning("! setting %s%s ignored: not an object", prefix, f.name)
        elif _fits(value, hint):
            kwargs[f.name] = float(value) if hint is float else value
        else:
            log.warning("! setting %s%s ignored: wrong type %r", prefix, f.name, value)
    return cls(**kwargs)


def _fits(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if origin is dict:
        key, item = typing.get_args(hint)
        return isinstance(value, dict) and all(
            _fits(k, key) and _fits(v, item) for k, v in value.items()
        )
    return isinstance(value, hint)
