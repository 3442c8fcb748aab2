"""Microphones, outputs and system-audio sources, in one typed list.

Where system audio comes from differs per OS (docs/system-audio.md):

- Linux (PulseAudio / PipeWire-pulse): every sink has a ``<sink>.monitor`` source.
  PortAudio has no Pulse backend, so each Pulse source is listed here and opened
  through PortAudio's ALSA ``pulse`` device with ``PULSE_SOURCE`` set (see
  :func:`pulse_route`); ``pactl`` tells which sources and sinks exist.
- Windows: WASAPI loopback inputs, which only PyAudioWPatch exposes.
- macOS: a virtual device (BlackHole, Loopback, Soundflower) routed by the user.

The parsing is done by pure functions fed plain lists, so every platform's rules
are testable anywhere; :func:`list_devices` asks the real system.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sounddevice as sd

from captioner.audio.errors import DeviceNotFound

log = logging.getLogger(__name__)

DeviceKind = Literal["mic", "system", "output"]
Backend = Literal["portaudio", "wasapi"]
KIND_TITLES: dict[DeviceKind, str] = {
    "mic": "Microphones",
    "system": "System audio",
    "output": "Outputs",
}
_KIND_PLURALS: dict[DeviceKind, str] = {  # for sentences
    "mic": "microphones",
    "system": "system-audio sources",
    "output": "audio outputs",
}

# Virtual devices that carry what the computer plays (macOS mostly; "Stereo Mix"
# is the old Windows/Realtek loopback input, "Monitor of" a Pulse monitor via ALSA).
LOOPBACK_NAME = re.compile(
    r"blackhole|loopback|soundflower|stereo mix|what u hear|monitor of", re.IGNORECASE
)
_PULSE_INDEX_BASE = 1000  # Pulse entries are numbered apart from PortAudio's devices
_PACTL_NULL = "(null)"  # what pactl 16's JSON says for a non-ASCII description


@dataclass(frozen=True, slots=True)
class AudioDevice:
    """One device the user can pick.

    ``index`` is unique within a listing and is what the user types; the stream
    opens ``open_index`` on ``backend`` (the same number unless this entry is a
    Pulse source reached through the ALSA ``pulse`` device, ``pulse_name`` set).
    """

    index: int
    name: str
    kind: DeviceKind
    channels: int
    default_samplerate: float
    is_default: bool = False
    hostapi: str = ""
    open_index: int | None = None
    pulse_name: str | None = None
    backend: Backend = "portaudio"

    @property
    def device_index(self) -> int:
        """The backend's device number to open."""
        return self.index if self.open_index is None else self.open_index

    def matches(self, text: str) -> bool:
        """Case-insensitive substring match on the name or the Pulse name."""
        needle = text.casefold()
        return needle in self.name.casefold() or (
            self.pulse_name is not None and needle in self.pulse_name.casefold()
        )

    def title(self) -> str:
        """The device as people know it: its name, and the Pulse source's when it differs."""
        extra = f" ({self.pulse_name})" if self.pulse_name and self.pulse_name != self.name else ""
        return f"{self.name}{extra}"

    def label(self) -> str:
        """The title with the number the ``devices`` command lists it under."""
        return f"[{self.index}] {self.title()}"


# --- pure classification ------------------------------------------------------


def portaudio_devices(
    devices: Sequence[Mapping[str, Any]],
    hostapis: Sequence[Mapping[str, Any]],
    default_input: int = -1,
    default_output: int = -1,
    skip_names: Iterable[str] = (),
) -> list[AudioDevice]:
    """Classify PortAudio's device dicts (as ``sounddevice.query_devices()`` gives them).

    An input whose name looks like a loopback (BlackHole, Soundflower, …) is a
    *system* source, any other input a *mic*; outputs are outputs. A device with
    both directions appears once per kind.
    """
    skip = set(skip_names)
    out: list[AudioDevice] = []
    for dev in devices:
        name = str(dev["name"])
        if name in skip:
            continue
        index = int(dev["index"])
        api_index = int(dev.get("hostapi", 0))
        api = str(hostapis[api_index]["name"]) if 0 <= api_index < len(hostapis) else ""
        rate = float(dev.get("default_samplerate", 0) or 0)
        ins, outs = int(dev.get("max_input_channels", 0)), int(dev.get("max_output_channels", 0))
        if ins > 0:
            kind: DeviceKind = "system" if LOOPBACK_NAME.search(name) else "mic"
            out.append(AudioDevice(index, name, kind, ins, rate,
                                   is_default=index == default_input, hostapi=api))
        if outs > 0:
            out.append(AudioDevice(index, name, "output", outs, rate,
                                   is_default=index == default_output, hostapi=api))
    return _defaults_first(out)


def pulse_devices(
    sources: Sequence[Mapping[str, Any]],
    sinks: Sequence[Mapping[str, Any]],
    default_source: str | None,
    default_sink: str | None,
    pulse_index: int,
    first_index: int = _PULSE_INDEX_BASE,
) -> list[AudioDevice]:
    """Pulse sources and sinks (``pactl -f json list`` dicts) as devices opened via ALSA ``pulse``.

    A sink's monitor is a *system* source; the default sink's monitor comes
    first and is the default system source. Other sources are *mics*.
    """
    monitors = {str(s.get("monitor_source")) for s in sinks if s.get("monitor_source")}
    default_monitor = next(
        (str(s.get("monitor_source")) for s in sinks if s.get("name") == default_sink), None
    )
    out: list[AudioDevice] = []
    for i, src in enumerate(sources):
        name = str(src.get("name", ""))
        props = src.get("properties") or {}
        is_monitor = (
            name in monitors or name.endswith(".monitor") or props.get("device.class") == "monitor"
        )
        channels, rate = _spec(src.get("sample_specification"))
        kind: DeviceKind = "system" if is_monitor else "mic"
        is_default = name == (default_monitor if is_monitor else default_source)
        out.append(AudioDevice(
            first_index + i, _description(src, name), kind, channels, rate,
            is_default=is_default, hostapi="PulseAudio", open_index=pulse_index, pulse_name=name,
        ))
    base = first_index + len(sources)
    for i, sink in enumerate(sinks):
        name = str(sink.get("name", ""))
        channels, rate = _spec(sink.get("sample_specification"))
        out.append(AudioDevice(
            base + i, _description(sink, name), "output", channels, rate,
            is_default=name == default_sink, hostapi="PulseAudio", open_index=pulse_index,
            pulse_name=name,
        ))
    return _defaults_first(out)


def pactl_descriptions(listing: str) -> dict[str, str]:
    """Name → description from ``pactl list sinks|sources`` text (the ``Name:`` and
    ``Description:`` lines of each block).

    pactl 16's JSON writes "(null)" for any description that is not plain ASCII;
    its text listing has them right.
    """
    out: dict[str, str] = {}
    name: str | None = None
    for line in listing.splitlines():
        if not line[:1].isspace():  # "Sink #3": a new block
            name = None
        elif line.startswith("\tName: "):
            name = line.removeprefix("\tName: ")
        elif line.startswith("\tDescription: ") and name is not None:
            out[name] = line.removeprefix("\tDescription: ")
    return out


def wasapi_devices(
    infos: Sequence[Mapping[str, Any]],
    default_output_name: str | None,
    default_input_index: int = -1,
    default_output_index: int = -1,
) -> list[AudioDevice]:
    """PyAudioWPatch device-info dicts (WASAPI host API only) as devices.

    Loopback entries (``isLoopbackDevice``) are *system* sources; the loopback of
    the default output is the default one.
    """
    out: list[AudioDevice] = []
    for info in infos:
        index, name = int(info["index"]), str(info["name"])
        rate = float(info.get("defaultSampleRate", 0) or 0)
        ins, outs = int(info.get("maxInputChannels", 0)), int(info.get("maxOutputChannels", 0))
        if info.get("isLoopbackDevice"):
            is_default = bool(default_output_name) and name.startswith(str(default_output_name))
            out.append(AudioDevice(index, name, "system", max(ins, 1), rate,
                                   is_default=is_default, hostapi="WASAPI", backend="wasapi"))
            continue
        if ins > 0:
            out.append(AudioDevice(index, name, "mic", ins, rate,
                                   is_default=index == default_input_index, hostapi="WASAPI",
                                   backend="wasapi"))
        if outs > 0:
            out.append(AudioDevice(index, name, "output", outs, rate,
                                   is_default=index == default_output_index, hostapi="WASAPI",
                                   backend="wasapi"))
    return _defaults_first(out)


def find_device(
    devices: Sequence[AudioDevice], kind: DeviceKind, spec: str | int | None = None
) -> AudioDevice:
    """The device of ``kind`` named by ``spec``: an index, a name (exact wins,
    else case-insensitive substring), or ``None``/"" for the default.

    Raises :class:`DeviceNotFound` whose message lists the devices that exist.
    """
    candidates = [d for d in devices if d.kind == kind]
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        if candidates:
            return next((d for d in candidates if d.is_default), candidates[0])
        raise _not_found(kind, "no device of this kind", candidates)
    text = str(spec).strip()
    if isinstance(spec, int) or text.lstrip("-").isdigit():
        for d in candidates:
            if d.index == int(text):
                return d
    else:
        for d in candidates:
            if text.casefold() in (d.name.casefold(), (d.pulse_name or "").casefold()):
                return d
        for d in candidates:
            if d.matches(text):
                return d
    raise _not_found(kind, f"no device matches {text!r}", candidates)


def _not_found(kind: DeviceKind, why: str, candidates: Sequence[AudioDevice]) -> DeviceNotFound:
    title = _KIND_PLURALS[kind]
    if candidates:
        listing = "; ".join(d.label() for d in candidates)
        msg = f"{KIND_TITLES[kind]}: {why}. Available {title}: {listing}"
    else:
        msg = f"{KIND_TITLES[kind]}: {why}. There are no {title} on this computer."
        if kind == "system":
            msg += " " + _system_hint()
    return DeviceNotFound(msg, [d.name for d in candidates])


def _system_hint() -> str:
    if sys.platform == "darwin":
        return "Install a loopback device such as BlackHole and route the output through it."
    if sys.platform == "win32":
        return "WASAPI loopback needs the PyAudioWPatch package."
    return "System audio needs PulseAudio or PipeWire-pulse (their sink monitors)."


def _defaults_first(devices: list[AudioDevice]) -> list[AudioDevice]:
    return sorted(devices, key=lambda d: not d.is_default)  # stable: order kept otherwise


def _description(row: Mapping[str, Any], name: str) -> str:
    """The row's description, or its Pulse name when pactl gave none (or "(null)")."""
    return name if _lacks_description(row) else str(row["description"])


def _lacks_description(row: Mapping[str, Any]) -> bool:
    return row.get("description") in (None, "", _PACTL_NULL)


def _spec(spec: object) -> tuple[int, float]:
    """'s16le 2ch 44100Hz' → (2, 44100.0); unknown parts fall back to stereo 48 kHz."""
    text = str(spec or "")
    ch = re.search(r"(\d+)ch", text)
    rate = re.search(r"(\d+)Hz", text)
    return (int(ch.group(1)) if ch else 2, float(rate.group(1)) if rate else 48_000.0)


# --- the real system ------------------------------------------------------------


def list_devices(platform: str | None = None) -> list[AudioDevice]:
    """Every device on this computer, defaults first within each kind."""
    platform = platform or sys.platform
    if platform == "win32":
        wasapi = _wasapi_listing()
        if wasapi is not None:
            return wasapi
    devices = [dict(d) for d in sd.query_devices()]
    hostapis = [dict(h) for h in sd.query_hostapis()]
    default_in, default_out = (int(x) for x in sd.default.device)
    if platform.startswith("linux"):
        pulse_index = next(
            (d["index"] for d in devices if d["name"] == "pulse" and d["max_input_channels"] > 0),
            None,
        )
        if pulse_index is not None:
            pulse = _pulse_listing(int(pulse_index))
            if pulse is not None:
                # The Pulse list replaces ALSA's "pulse" and "default" entries, except
                # that "default" stays as the mic when Pulse has no real source.
                has_mics = any(d.kind == "mic" for d in pulse)
                rest = [
                    d for d in portaudio_devices(devices, hostapis, default_in, default_out,
                                                 skip_names=("pulse",))
                    if d.name != "default" or (d.kind == "mic" and not has_mics)
                ]
                return _defaults_first(pulse + rest)
    return portaudio_devices(devices, hostapis, default_in, default_out)


def refresh_portaudio() -> None:
    """Re-scan PortAudio's devices (it lists them once, at start-up).

    Needed when a sound server starts after the process did. Only call it while
    no stream is open: PortAudio is shut down and restarted.
    """
    sd._terminate()
    sd._initialize()


def pactl(*args: str, timeout: float = 5.0) -> str | None:
    """Output of ``pactl args…`` in the C locale (English labels), or None if Pulse is
    not there. Pulse's strings are UTF-8 whatever the locale, so they are read as such."""
    exe = shutil.which("pactl")
    if exe is None:
        return None
    env = dict(os.environ, LC_ALL="C")
    try:
        done = subprocess.run([exe, *args], capture_output=True, encoding="utf-8",
                              errors="replace", timeout=timeout, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("! pactl %s failed: %s", " ".join(args), exc)
        return None
    if done.returncode != 0:
        log.debug("! pactl %s: %s", " ".join(args), done.stderr.strip())
        return None
    return done.stdout


def _pulse_listing(pulse_index: int) -> list[AudioDevice] | None:
    sources = _pactl_rows("sources")
    sinks = _pactl_rows("sinks")
    if sources is None or sinks is None:
        return None
    default_sink = (pactl("get-default-sink") or "").strip() or None
    default_source = (pactl("get-default-source") or "").strip() or None
    return pulse_devices(sources, sinks, default_source, default_sink, pulse_index)


def _pactl_rows(what: str) -> list[dict[str, Any]] | None:
    """Sinks or sources as dicts; descriptions pactl's JSON lost (or older pactl's short
    listing lacks) are taken from the text listing, one more call only when needed."""
    rows = _pactl_json(what)
    if rows is not None and any(_lacks_description(r) for r in rows):
        found = pactl_descriptions(pactl("list", what) or "")
        for row in rows:
            if _lacks_description(row) and str(row.get("name")) in found:
                row["description"] = found[str(row.get("name"))]
    return rows


def _pactl_json(what: str) -> list[dict[str, Any]] | None:
    text = pactl("-f", "json", "list", what)
    if text is not None:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, list):
            return [d for d in data if isinstance(d, dict)]
    short = pactl("list", "short", what)  # pactl older than 16 has no JSON
    if short is None:
        return None
    rows = []
    for line in short.splitlines():
        parts = line.split("\t")
        if len(parts) >= 4:
            row: dict[str, Any] = {"name": parts[1], "sample_specification": parts[3]}
            if what == "sinks":
                row["monitor_source"] = parts[1] + ".monitor"
            rows.append(row)
    return rows


def _wasapi_listing() -> list[AudioDevice] | None:
    try:
        import pyaudiowpatch as pyaudio  # Windows-only wheels
    except ImportError:
        log.warning("! PyAudioWPatch is not installed: no WASAPI loopback (system audio)")
        return None
    pa = pyaudio.PyAudio()
    try:
        wasapi = pa.get_host_api_info_by_type(pyaudio.paWASAPI)
        infos = [pa.get_device_info_by_host_api_device_index(wasapi["index"], i)
                 for i in range(int(wasapi["deviceCount"]))]
        default_out = wasapi.get("defaultOutputDevice", -1)
        default_name = next((i["name"] for i in infos if i["index"] == default_out), None)
        return wasapi_devices(infos, default_name, int(wasapi.get("defaultInputDevice", -1)),
                              int(default_out))
    finally:
        pa.terminate()


_route_lock = threading.Lock()


@contextlib.contextmanager
def pulse_route(device: AudioDevice) -> Iterator[None]:
    """While opening a stream on ``device``, point the Pulse ALSA plugin at it.

    The plugin's Pulse client reads ``PULSE_SOURCE``/``PULSE_SINK`` when the ALSA
    device is opened, so the variable only has to be set around the open call;
    the lock keeps two opens from mixing their routes. A no-op for non-Pulse devices.
    """
    var = "PULSE_SINK" if device.kind == "output" else "PULSE_SOURCE"
    with _pulse_env(var, device.pulse_name):
        yield


def pulse_sink(pulse_name: str | None) -> contextlib.AbstractContextManager[None]:
    """``pulse_route`` for an output known by its Pulse sink's name (None: no-op)."""
    return _pulse_env("PULSE_SINK", pulse_name)


@contextlib.contextmanager
def _pulse_env(var: str, value: str | None) -> Iterator[None]:
    if value is None:
        yield
        return
    with _route_lock:
        old = os.environ.get(var)
        os.environ[var] = value
        try:
            yield
        finally:
            if old is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = old
