"""`captioner` entry point: the GUI by default, headless subcommands otherwise.

Each subcommand lives in ``captioner/commands/<name>.py`` and exposes
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from captioner import __version__
from captioner.logs import setup_logging

COMMANDS = (
    "devices",
    "listen",
    "transcribe",
    "serve",
    "endpoint",
    "say",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="captioner",
        description="Floating live captions of system audio and microphone.",
    )
    parser.add_argument("--version", action="version", version=f"captioner {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log detail")
    parser.add_argument("--self-test", action="store_true",
                        help="check this installation (speech sample, audio, Qt) and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"captioner.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    if args.self_test:
        from captioner.selftest import run_self_test

        return run_self_test()
    if args.command is None:
        from captioner.ui.app import run_app  # Qt is imported only for the GUI

        return run_app(args)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
