"""Stand-in for ``vllm``: records its argv, prints its arguments as vLLM does at start
(secrets included), then serves ``/health`` on ``--port``.

FAKE_VLLM_RECORD: file that receives {"argv": [...]} (the test's wrapper notes the pid).
FAKE_VLLM_MODE: "serve" (default), "hang" (never healthy), "die" (exit 3 at once).
``GET /die`` makes a serving stand-in exit with status 5.
"""

import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

with open(os.environ["FAKE_VLLM_RECORD"], "w") as record:
    json.dump({"argv": sys.argv[1:]}, record)

flags, key = {}, None
for arg in sys.argv[3:]:
    if arg.startswith("--"):
        key = arg[2:].replace("-", "_")
        flags[key] = True
    elif key is not None:
        flags[key] = arg
print(f"INFO api_server.py: non-default args: {flags}", flush=True)
print(f"INFO api_server.py: HF token from the environment: {os.environ.get('HF_TOKEN')}",
      file=sys.stderr, flush=True)

mode = os.environ.get("FAKE_VLLM_MODE", "serve")
if mode == "die":
    sys.exit(3)
if mode == "hang":
    signal.pause()

port = int(sys.argv[sys.argv.index("--port") + 1])


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = 200 if self.path in ("/health", "/die") else 404
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.wfile.flush()
        if self.path == "/die":
            os._exit(5)

    def log_message(self, *args: object) -> None:
        pass


HTTPServer(("127.0.0.1", port), Handler).serve_forever()
