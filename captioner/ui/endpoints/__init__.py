"""Settings → Endpoints, in small widgets: account, per-kind set-up, preflight, start."""
