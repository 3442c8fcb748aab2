"""The one typed settings object, loaded and saved in one place.

Secrets never live here: AWS keys go to the OS keyring (captioner.aws.credentials).

The app must always start, and never destroys what the user wrote:
- unknown keys are ignored; a wrongly typed value, or a number outside the range
  its field declares with :func:`ranged`, falls back to that field's default with a
  problem message naming the field and the accepted range;
- a file that is not JSON (or not an object) is never overwritten: the app moves it
  aside to ``settings.json.bak`` (or a timestamped ``.bak``) before using defaults,
  and says so; the CLI leaves it in place. When it cannot be moved, settings are not
  saved at all.
:func:`read` returns the problems for the caller to show; :func:`load` logs them.
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
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import platformdirs

log = logging.getLogger(__name__)

APP_NAME = "Captioner"
DEFAULT_STT_MODEL = "mistralai/Voxtral-Mini-4B-Realtime-2602"

Source = Literal["mic", "system", "both"]
DEFAULT_MIC_LABEL = "You"
DEFAULT_SYSTEM_LABEL = "Others"
RANGE = "range"  # field metadata key: (lowest, highest) accepted value
PRIVATE_DIR = 0o700  # folders holding settings, logs, transcripts: this user's only
PRIVATE_FILE = 0o600


def ranged(default: float, lowest: float, highest: float) -> Any:
    """A numeric field whose loaded value must lie in [lowest, highest] (else: default)."""
    return field(default=default, metadata={RANGE: (lowest, highest)})


@dataclass
class AudioSettings:
    source: Source = "system"
    mic_device: str | None = None  # name or index as text; None = default
    system_device: str | None = None
    mic_gain: float = ranged(1.0, 0.0, 8.0)
    system_gain: float = ranged(1.0, 0.0, 8.0)
    # 80 ms of 16 kHz PCM16, one model frame; see captioner.audio.chunker (20 ms … 1 s)
    chunk_bytes: int = ranged(2560, 640, 32_000)
    # with source "both": caption the microphone and the system audio as two labelled
    # streams ("You" and "Others") instead of one mix
    speakers: bool = False
    # two streams: cancel the others' voices the microphone hears from the speakers
    echo_cancel: bool = True
    mic_label: str = DEFAULT_MIC_LABEL
    system_label: str = DEFAULT_SYSTEM_LABEL

    @property
    def two_streams(self) -> bool:
        return self.source == "both" and self.speakers

    def capture_key(self) -> tuple[object, ...]:
        """What opening the capture depends on (gains and labels apply to a running one)."""
        return (self.source, self.mic_device, self.system_device, self.chunk_bytes,
                self.speakers, self.echo_cancel)

    def labels(self) -> tuple[str, str]:
        """(microphone's, system audio's) speaker names; a blank one is its default."""
        return (self.mic_label.strip() or DEFAULT_MIC_LABEL,
                self.system_label.strip() or DEFAULT_SYSTEM_LABEL)


@dataclass
class RecognitionSettings:
    # "embedded" | "ws://host/v1/realtime" | "wss://…" | "sagemaker://ENDPOINT?region=…&profile=…"
    endpoint: str = "embedded"
    model: str = DEFAULT_STT_MODEL
    whisper_model_dir: str | None = None  # None = the chosen whisper_model; a folder wins
    whisper_model: Literal["tiny.en", "base"] = "tiny.en"  # base: the multilingual extra
    whisper_language: str | None = None  # None = detect; a Whisper code ("de"); base only
    whisper_threads: int = ranged(2, 1, 64)
    rotate_after_seconds: float = ranged(45 * 60.0, 60.0, 24 * 3600.0)
    stall_seconds: float = ranged(4.0, 1.0, 600.0)  # sound without text: restart
    outage_buffer_seconds: float = ranged(60.0, 0.0, 600.0)


@dataclass
class AwsSettings:
    region: str = "us-east-1"
    profile: str | None = None  # None with use_keyring=False: boto3's default chain
    use_keyring: bool = False  # access keys kept in the OS keyring


@dataclass
class AppearanceSettings:
    font_family: str = "Sans Serif"
    font_size: int = ranged(28, 8, 72)
    lines: int = ranged(2, 1, 5)
    # longest caption row; rows break at phrase boundaries within it
    row_chars: int = ranged(42, 20, 120)
    preset: str = "yellow-on-black"
    text_color: str = "#FFFF00"
    background_color: str = "#000000"
    background_opacity: float = ranged(0.8, 0.0, 1.0)
    outline: bool = True
    dock: Literal["top", "bottom", "floating"] = "bottom"
    linger_seconds: float = ranged(8.0, 1.0, 120.0)
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
    export_folder: str = ""  # where the last export went: the save dialog opens there
    history_text_points: int = 0  # the history window's transcript text; 0: the system's


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
    autoscale_min: int = ranged(0, 0, 20)  # 0 = autoscaling off; 20 = scaling.MAX_INSTANCES
    autoscale_max: int = ranged(1, 1, 20)
    # preflight checks the user chose to go past because they cannot be read (e.g. the
    # quota without Service Quotas permission); a check that FAILS is never skipped
    accepted_unknown: list[str] = field(default_factory=list)
    # the server deletes it then (renewed while in use); 0 = off
    max_lifetime_hours: float = ranged(8.0, 0.0, 7 * 24.0)


@dataclass
class FeedSettings:
    """Live captions for other apps (each off until turned on)."""

    web_page: bool = False  # the loopback caption page (an OBS browser source)
    web_port: int = ranged(8645, 1024, 65535)
    token: str = ""  # made once when the page is first turned on; part of its URL
    text_file: bool = False
    text_path: str = ""  # "" = live-captions.txt in the transcript folder
    vtt_file: bool = False
    vtt_path: str = ""  # "" = live-captions.vtt in the transcript folder


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
    idle_stop_minutes: int = ranged(30, 5, 24 * 60)


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
    feed: FeedSettings = field(default_factory=FeedSettings)
    first_run: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], problems: list[str] | None = None) -> Settings:
        """Settings from a JSON object; each value that is dropped adds to ``problems``."""
        return _build(cls, data, "", problems if problems is not None else [])


@dataclass(frozen=True, slots=True)
class LoadResult:
    settings: Settings
    problems: tuple[str, ...] = ()  # sentences for the user, one per problem
    kept_as: Path | None = None  # where an unreadable file was moved
    writable: bool = True  # False: saving would overwrite a file that could not be kept


def config_dir() -> Path:
    override = os.environ.get("CAPTIONER_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir(APP_NAME))


def settings_path() -> Path:
    return config_dir() / "settings.json"


def read(path: Path | None = None, *, keep_unreadable: bool = False) -> LoadResult:
    """Settings from disk with what was wrong with the file; never raises.

    ``keep_unreadable`` (the app, which saves): move a file that is not valid JSON to a
    ``.bak`` first, so saving defaults never overwrites it."""
    path = path or settings_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return LoadResult(Settings())
    except OSError as exc:
        return LoadResult(Settings(), (f"{path} could not be read ({exc.strerror or exc}): "
                                       "default settings are used and changes are not "
                                       "saved.",), writable=False)
    except ValueError as exc:
        return _unreadable(path, _json_fault(exc), keep_unreadable)
    if not isinstance(data, dict):
        return _unreadable(path, "it is not a JSON object", keep_unreadable)
    problems: list[str] = []
    settings = Settings.from_dict(data, problems)
    return LoadResult(settings, tuple(problems))


def load(path: Path | None = None) -> Settings:
    """Settings from disk, defaults when missing or unreadable; logs each problem as a
    warning (the CLI shows those). Never raises, never moves or writes the file."""
    result = read(path)
    for problem in result.problems:
        log.warning("! %s", problem)
    return result.settings


def backup_path(path: Path) -> Path:
    """``settings.json.bak``, or a timestamped one when that is taken."""
    plain = path.with_name(path.name + ".bak")
    if not plain.exists():
        return plain
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return path.with_name(f"{path.name}.{stamp}.bak")


def _unreadable(path: Path, fault: str, keep: bool) -> LoadResult:
    if not keep:
        return LoadResult(Settings(), (f"{path} could not be read ({fault}): default settings "
                                       "are used; the file is left as it is.",))
    kept = backup_path(path)
    try:
        os.replace(path, kept)
    except OSError as exc:
        return LoadResult(Settings(), (
            f"{path} could not be read ({fault}) nor moved aside ({exc.strerror or exc}): "
            "default settings are used and changes are not saved, so the file stays as "
            "it is.",), writable=False)
    return LoadResult(Settings(), (f"Settings reset: {path.name} could not be read and is "
                                   f"kept as {kept.name} ({fault}; in {path.parent}).",),
                      kept_as=kept)


def _json_fault(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    return str(exc)


def save(settings: Settings, path: Path | None = None) -> None:
    """Write atomically (temp file + rename) so a crash never leaves half a file."""
    path = path or settings_path()
    path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
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


def _build(cls: type, data: dict[str, Any], prefix: str, problems: list[str]) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value, hint, name = data[f.name], hints[f.name], f"{prefix}{f.name}"
        if dataclasses.is_dataclass(hint):
            if isinstance(value, dict):
                kwargs[f.name] = _build(hint, value, f"{name}.", problems)
            else:
                problems.append(f"Setting {name} ignored: it is not a group of settings.")
        elif not _fits(value, hint):
            problems.append(f"Setting {name} = {value!r} ignored: wrong type; the default "
                            "is used.")
        elif RANGE in f.metadata and not f.metadata[RANGE][0] <= value <= f.metadata[RANGE][1]:
            lowest, highest = f.metadata[RANGE]
            problems.append(f"Setting {name} = {value!r} is outside the accepted range "
                            f"{lowest:g}–{highest:g}; the default {f.default!r} is used.")
        else:
            kwargs[f.name] = float(value) if hint is float else value
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
