"""Device listing per platform (fed real-looking lists) and device choice by name/index."""

import pytest

from captioner.audio import devices as devices_module
from captioner.audio.devices import (
    AudioDevice,
    find_device,
    list_devices,
    pactl_descriptions,
    portaudio_devices,
    pulse_devices,
    wasapi_devices,
)
from captioner.audio.errors import DeviceNotFound

MAC_HOSTAPIS = [{"name": "Core Audio"}]
MAC_DEVICES = [
    {"index": 0, "name": "MacBook Pro Microphone", "hostapi": 0, "max_input_channels": 1,
     "max_output_channels": 0, "default_samplerate": 48000.0},
    {"index": 1, "name": "MacBook Pro Speakers", "hostapi": 0, "max_input_channels": 0,
     "max_output_channels": 2, "default_samplerate": 48000.0},
    {"index": 2, "name": "BlackHole 2ch", "hostapi": 0, "max_input_channels": 2,
     "max_output_channels": 2, "default_samplerate": 48000.0},
    {"index": 3, "name": "Loopback Audio", "hostapi": 0, "max_input_channels": 2,
     "max_output_channels": 0, "default_samplerate": 44100.0},
    {"index": 4, "name": "Soundflower (2ch)", "hostapi": 0, "max_input_channels": 2,
     "max_output_channels": 2, "default_samplerate": 44100.0},
]

PULSE_SOURCES = [
    {"name": "alsa_output.pci.analog-stereo.monitor", "description": "Monitor of Built-in Audio",
     "sample_specification": "s16le 2ch 44100Hz", "properties": {"device.class": "monitor"}},
    {"name": "alsa_input.pci.analog-stereo", "description": "Built-in Audio Analog Stereo",
     "sample_specification": "s16le 2ch 48000Hz", "properties": {"device.class": "sound"}},
    {"name": "bluez_output.headset.monitor", "description": "Monitor of Headset",
     "sample_specification": "s16le 2ch 48000Hz", "properties": {}},
]
PULSE_SINKS = [
    {"name": "alsa_output.pci.analog-stereo", "description": "Built-in Audio",
     "sample_specification": "s16le 2ch 44100Hz",
     "monitor_source": "alsa_output.pci.analog-stereo.monitor"},
    {"name": "bluez_output.headset", "description": "Headset",
     "sample_specification": "s16le 2ch 48000Hz", "monitor_source": "bluez_output.headset.monitor"},
]

WASAPI_INFOS = [
    {"index": 10, "name": "Speakers (Realtek)", "maxInputChannels": 0, "maxOutputChannels": 2,
     "defaultSampleRate": 48000.0, "isLoopbackDevice": False},
    {"index": 11, "name": "Microphone (USB)", "maxInputChannels": 1, "maxOutputChannels": 0,
     "defaultSampleRate": 44100.0, "isLoopbackDevice": False},
    {"index": 12, "name": "Headphones (BT)", "maxInputChannels": 0, "maxOutputChannels": 2,
     "defaultSampleRate": 44100.0, "isLoopbackDevice": False},
    {"index": 20, "name": "Headphones (BT) [Loopback]", "maxInputChannels": 2,
     "maxOutputChannels": 0, "defaultSampleRate": 44100.0, "isLoopbackDevice": True},
    {"index": 21, "name": "Speakers (Realtek) [Loopback]", "maxInputChannels": 2,
     "maxOutputChannels": 0, "defaultSampleRate": 48000.0, "isLoopbackDevice": True},
]


def names(devices, kind):
    return [d.name for d in devices if d.kind == kind]


def test_macos_virtual_loopbacks_are_system_sources():
    devices = portaudio_devices(MAC_DEVICES, MAC_HOSTAPIS, default_input=0, default_output=1)
    assert names(devices, "system") == ["BlackHole 2ch", "Loopback Audio", "Soundflower (2ch)"]
    assert names(devices, "mic") == ["MacBook Pro Microphone"]
    assert names(devices, "output") == ["MacBook Pro Speakers", "BlackHole 2ch",
                                        "Soundflower (2ch)"]
    mic = find_device(devices, "mic")
    assert mic.is_default and mic.hostapi == "Core Audio" and mic.channels == 1
    assert find_device(devices, "system", "blackhole").index == 2


def test_pulse_monitors_are_system_sources_default_sink_first():
    devices = pulse_devices(PULSE_SOURCES, PULSE_SINKS,
                            default_source="alsa_input.pci.analog-stereo",
                            default_sink="bluez_output.headset", pulse_index=7)
    system = [d for d in devices if d.kind == "system"]
    assert [d.pulse_name for d in system] == ["bluez_output.headset.monitor",
                                              "alsa_output.pci.analog-stereo.monitor"]
    assert system[0].is_default and not system[1].is_default
    assert all(d.device_index == 7 and d.hostapi == "PulseAudio" for d in devices)
    mic = find_device(devices, "mic")
    assert (mic.pulse_name, mic.is_default, mic.default_samplerate) == (
        "alsa_input.pci.analog-stereo", True, 48000.0)
    out = find_device(devices, "output")
    assert out.pulse_name == "bluez_output.headset" and out.is_default
    assert len({d.index for d in devices}) == len(devices)  # unique, user-typable


def test_windows_loopback_of_default_output_is_the_default_system_source():
    devices = wasapi_devices(WASAPI_INFOS, "Speakers (Realtek)", default_input_index=11,
                             default_output_index=10)
    system = find_device(devices, "system")
    assert system.name == "Speakers (Realtek) [Loopback]" and system.backend == "wasapi"
    assert names(devices, "system") == ["Speakers (Realtek) [Loopback]",
                                        "Headphones (BT) [Loopback]"]
    assert find_device(devices, "mic").name == "Microphone (USB)"
    assert find_device(devices, "output").name == "Speakers (Realtek)"
    assert find_device(devices, "system", "headphones").index == 20


def test_choice_by_index_exact_name_and_substring():
    devices = [
        AudioDevice(1, "USB Mic Pro", "mic", 1, 48000.0),
        AudioDevice(2, "USB Mic", "mic", 1, 48000.0, is_default=True),
        AudioDevice(3, "Monitor of X", "system", 2, 48000.0, pulse_name="x.monitor"),
    ]
    assert find_device(devices, "mic", "usb mic").index == 2  # exact name beats substring
    assert find_device(devices, "mic", "PRO").index == 1
    assert find_device(devices, "mic", 1).index == 1
    assert find_device(devices, "mic", " 2 ").index == 2
    assert find_device(devices, "mic", None).index == 2
    assert find_device(devices, "mic", "").index == 2
    assert find_device(devices, "system", "x.monitor").index == 3


def test_unknown_device_message_lists_the_real_devices():
    devices = portaudio_devices(MAC_DEVICES, MAC_HOSTAPIS, default_input=0, default_output=1)
    with pytest.raises(DeviceNotFound) as caught:
        find_device(devices, "mic", "Yeti")
    message = str(caught.value)
    assert "'Yeti'" in message and "[0] MacBook Pro Microphone" in message
    assert caught.value.available == ["MacBook Pro Microphone"]
    with pytest.raises(DeviceNotFound, match=r"\[2\] BlackHole 2ch"):
        find_device(devices, "system", 99)


def test_no_system_source_says_how_to_get_one():
    devices = portaudio_devices(MAC_DEVICES[:2], MAC_HOSTAPIS)
    with pytest.raises(DeviceNotFound, match="no system-audio sources") as caught:
        find_device(devices, "system")
    assert caught.value.available == []


def test_real_pulse_listing_has_the_test_sink_monitor_as_default(pulse):
    devices = list_devices()
    system = find_device(devices, "system")
    assert system.pulse_name == pulse.monitor and system.hostapi == "PulseAudio"
    assert find_device(devices, "output").pulse_name == pulse.sink
    assert find_device(devices, "system", pulse.monitor) == system


# Descriptions pactl 16's JSON gives as "(null)": accents with a space, emoji,
# Cyrillic, CJK, right-to-left.
NON_ASCII_SINKS = {
    "fr_speakers": "Haut-parleurs intégrés",
    "headphones": "Écouteurs 🎧",
    "ru_headset": "Наушники",
    "cjk_headset": "耳机",
    "he_speakers": "רמקולים",
}
NON_ASCII_MIC = ("es_mic", "Micrófono USB")


@pytest.fixture
def non_ascii_devices(pulse):
    """Null sinks (and a microphone on the first) with the descriptions above,
    unloaded afterwards so the session's Pulse is left as it was."""
    modules = [
        pulse.pactl("load-module", "module-null-sink", f"sink_name={name}",
                    f"sink_properties='device.description=\"{desc}\"'")
        for name, desc in NON_ASCII_SINKS.items()
    ]
    mic, mic_desc = NON_ASCII_MIC
    modules.append(pulse.pactl(
        "load-module", "module-remap-source", f"master={next(iter(NON_ASCII_SINKS))}.monitor",
        f"source_name={mic}", f"source_properties='device.description=\"{mic_desc}\"'"))
    try:
        yield
    finally:
        for module in reversed(modules):
            pulse.pactl("unload-module", module)


def test_non_ascii_device_names_are_listed_and_found_by_name(non_ascii_devices):
    devices = list_devices()
    assert not [d for d in devices if "(null)" in d.name]
    for name, desc in NON_ASCII_SINKS.items():
        output = find_device(devices, "output", desc)
        assert (output.pulse_name, output.name) == (name, desc)
        monitor = find_device(devices, "system", f"Monitor of {desc}")
        assert monitor.pulse_name == f"{name}.monitor"
    mic, mic_desc = NON_ASCII_MIC
    assert find_device(devices, "mic", mic_desc).pulse_name == mic


def test_text_listing_is_read_only_when_a_description_is_missing(pulse, monkeypatch):
    calls: list[tuple[str, ...]] = []
    real = devices_module.pactl

    def counting(*args: str, **kwargs: float) -> str | None:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(devices_module, "pactl", counting)
    list_devices()  # the session's sinks are all named in ASCII
    assert ("list", "sinks") not in calls and ("list", "sources") not in calls


def test_descriptions_from_the_text_listing():
    listing = (
        "Sink #0\n\tState: IDLE\n\tName: alsa_output.pci\n"
        "\tDescription: Audio interne: Stéréo analogique\n"
        "\tProperties:\n\t\tdevice.description = \"Audio interne: Stéréo analogique\"\n\n"
        "Sink #1\n\tName: no_description\n\n"
        "Sink #2\n\tName: usb\n\tDescription: Наушники \n"
    )
    assert pactl_descriptions(listing) == {
        "alsa_output.pci": "Audio interne: Stéréo analogique", "usb": "Наушники "}


def test_null_description_falls_back_to_the_pulse_name():
    sinks = [{"name": "alsa_output.usb", "description": "(null)",
              "sample_specification": "s16le 2ch 48000Hz"}]
    (device,) = pulse_devices([], sinks, None, "alsa_output.usb", pulse_index=7)
    assert device.name == "alsa_output.usb"
