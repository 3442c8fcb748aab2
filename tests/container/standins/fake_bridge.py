"""Stand-in for the bridge process, run through BRIDGE_CMD.

Reports the BRIDGE_* environment it was given as one JSON line, to the file
FAKE_BRIDGE_REPORT. Then exits with FAKE_BRIDGE_EXIT if set; otherwise
connects to 127.0.0.1:FAKE_BRIDGE_CONTROL, sends the same line, and waits;
on SIGTERM it sends "term" there and exits 0.
"""

import json
import os
import signal
import socket
import sys

line = json.dumps({k: v for k, v in os.environ.items() if k.startswith("BRIDGE_")}) + "\n"
with open(os.environ["FAKE_BRIDGE_REPORT"], "w") as report:
    report.write(line)

if os.environ.get("FAKE_BRIDGE_EXIT"):
    sys.exit(int(os.environ["FAKE_BRIDGE_EXIT"]))

control = socket.create_connection(("127.0.0.1", int(os.environ["FAKE_BRIDGE_CONTROL"])))


def on_term(signum: int, frame: object) -> None:
    control.sendall(b"term\n")
    control.close()
    sys.exit(0)


signal.signal(signal.SIGTERM, on_term)
control.sendall(line.encode())
while True:
    signal.pause()
