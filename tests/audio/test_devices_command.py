"""`captioner devices` against the test PulseAudio."""

import argparse
import json

from captioner.commands import devices


def main(argv):
    """Run the subcommand through its own parser (the full CLI needs every other command)."""
    parser = argparse.ArgumentParser(prog="captioner")
    devices.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_devices_lists_the_three_groups_with_the_default_marked(pulse, capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    mics, system, outputs = (out.index(t) for t in ("Microphones:", "System audio:", "Outputs:"))
    assert mics < system < outputs
    system_part = out[system:outputs]
    assert "* [" in system_part and f"({pulse.monitor})" in system_part
    marked = [line for line in system_part.splitlines() if line.lstrip().startswith("*")]
    assert len(marked) == 1 and pulse.monitor in marked[0]
    assert f"({pulse.sink})" in out[outputs:]


def test_devices_json(pulse, capsys):
    assert main(["devices", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    monitor = next(r for r in rows if r["pulse_name"] == pulse.monitor)
    assert monitor["kind"] == "system" and monitor["is_default"] is True
