"""`captioner devices`: the microphones, system-audio sources and outputs this computer has.

The index or a part of the name shown here is what ``listen --mic/--system``
and the settings accept; ``*`` marks each kind's default.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from captioner.audio.devices import KIND_TITLES, AudioDevice, list_devices


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "devices", help="list microphones, system-audio sources and outputs",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        devices = list_devices()
    except OSError as exc:  # PortAudio missing or unusable
        print(f"captioner: cannot list audio devices: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([asdict(d) for d in devices], indent=2))
        return 0
    print(format_devices(devices))
    return 0


def format_devices(devices: list[AudioDevice]) -> str:
    """The three groups, each device as ``* [index] name (details)``."""
    lines: list[str] = []
    for kind, title in KIND_TITLES.items():
        group = [d for d in devices if d.kind == kind]
        lines.append(f"{title}:")
        if not group:
            lines.append("    (none)")
        for d in group:
            mark = "*" if d.is_default else " "
            detail = f"{d.channels} ch, {d.default_samplerate:.0f} Hz, {d.hostapi}"
            lines.append(f"  {mark} {d.label()}  — {detail}")
        lines.append("")
    lines.append("* = default")
    return "\n".join(lines)
