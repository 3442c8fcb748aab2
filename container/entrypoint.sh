#!/usr/bin/env bash
# Entrypoint of the Captioner STT image: `vllm serve` on port 8081 plus the
# WebSocket bridge that SageMaker talks to on 8080. See README.md for the
# SM_VLLM_* → `vllm serve` flag mapping and the other variables.
#
# Exits non-zero as soon as either process dies (SageMaker then replaces the
# container) and forwards SIGTERM/SIGINT to both.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

BACKEND_PORT="${BACKEND_PORT:-8081}"
HEALTH_WAIT_TIMEOUT="${HEALTH_WAIT_TIMEOUT:-1200}"
HEALTH_POLL_INTERVAL="${HEALTH_POLL_INTERVAL:-2}"
MODEL_DIR="${MODEL_DIR:-/opt/ml/model}"
BRIDGE_HOST="${BRIDGE_HOST:-0.0.0.0}"
BRIDGE_PORT="${BRIDGE_PORT:-8080}"
BRIDGE_PYTHON="${BRIDGE_PYTHON:-python3}"
BRIDGE_APP_DIR="${BRIDGE_APP_DIR:-$here}"
BRIDGE_DEPS_DIR="${BRIDGE_DEPS_DIR:-$here/lib}"
VLLM_BIN="${VLLM_BIN:-vllm}"

log() { printf 'entrypoint: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ "$BACKEND_PORT" =~ ^[0-9]+$ ]] || die "BACKEND_PORT must be a port number, got '$BACKEND_PORT'"
[[ "$HEALTH_WAIT_TIMEOUT" =~ ^[0-9]+$ ]] \
    || die "HEALTH_WAIT_TIMEOUT must be whole seconds, got '$HEALTH_WAIT_TIMEOUT'"

# --- SM_VLLM_* → vllm serve arguments ----------------------------------------
# SM_VLLM_MAX_MODEL_LEN=45000 → --max-model-len 45000; "true" → bare flag;
# "false" → flag left out; SM_VLLM_MODEL → the positional model.
model="${SM_VLLM_MODEL:-}"
vllm_args=()
while IFS= read -r name; do
    case "$name" in
        SM_VLLM_MODEL) continue ;;
        SM_VLLM_PORT)
            log "ignoring SM_VLLM_PORT: the bridge expects vLLM on BACKEND_PORT ($BACKEND_PORT)"
            continue ;;
    esac
    value="${!name}"
    flag="${name#SM_VLLM_}"
    flag="--${flag,,}"
    flag="${flag//_/-}"
    case "${value,,}" in
        true) vllm_args+=("$flag") ;;
        false) ;;
        *) vllm_args+=("$flag" "$value") ;;
    esac
done < <(compgen -e | grep '^SM_VLLM_' | LC_ALL=C sort || true)

if [[ -z "$model" ]]; then
    if [[ -d "$MODEL_DIR" ]] && [[ -n "$(ls -A "$MODEL_DIR" 2>/dev/null)" ]]; then
        model="$MODEL_DIR"
    else
        die "no model: set SM_VLLM_MODEL or mount model data at $MODEL_DIR"
    fi
fi

# --- process supervision ------------------------------------------------------
vllm_pid=""
bridge_pid=""

stop_children() {
    local pid
    for pid in "$bridge_pid" "$vllm_pid"; do
        if [[ -n "$pid" ]]; then kill -TERM "$pid" 2>/dev/null || true; fi
    done
    for pid in "$bridge_pid" "$vllm_pid"; do
        if [[ -n "$pid" ]]; then wait "$pid" 2>/dev/null || true; fi
    done
}

# shellcheck disable=SC2317  # invoked by the traps below
on_signal() {
    log "received $1, stopping vLLM and the bridge"
    trap - TERM INT
    stop_children
    exit $(( 128 + $2 ))
}
trap 'on_signal SIGTERM 15' TERM
trap 'on_signal SIGINT 2' INT

backend_healthy() {
    "$BRIDGE_PYTHON" - "http://127.0.0.1:$BACKEND_PORT/health" <<'PY'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=2) as response:
        sys.exit(0 if response.status == 200 else 1)
except Exception:
    sys.exit(1)
PY
}

log "starting: $VLLM_BIN serve $model ${vllm_args[*]} --port $BACKEND_PORT"
"$VLLM_BIN" serve "$model" "${vllm_args[@]}" --port "$BACKEND_PORT" &
vllm_pid=$!

deadline=$(( SECONDS + HEALTH_WAIT_TIMEOUT ))
until backend_healthy; do
    if ! kill -0 "$vllm_pid" 2>/dev/null; then
        status=0
        wait "$vllm_pid" || status=$?
        vllm_pid=""
        die "vLLM exited (status $status) before it became healthy"
    fi
    if (( SECONDS >= deadline )); then
        log "error: vLLM did not become healthy on port $BACKEND_PORT within $HEALTH_WAIT_TIMEOUT s"
        stop_children
        exit 1
    fi
    sleep "$HEALTH_POLL_INTERVAL"
done
log "vLLM is healthy on port $BACKEND_PORT"

export BRIDGE_BACKEND_URL="${BRIDGE_BACKEND_URL:-ws://127.0.0.1:$BACKEND_PORT/v1/realtime}"
export BRIDGE_HEALTH_URL="${BRIDGE_HEALTH_URL:-http://127.0.0.1:$BACKEND_PORT/health}"
if [[ -n "${BRIDGE_CMD:-}" ]]; then
    log "starting bridge: $BRIDGE_CMD"
    bash -c "$BRIDGE_CMD" &
else
    export PYTHONPATH="$BRIDGE_DEPS_DIR:$BRIDGE_APP_DIR${PYTHONPATH:+:$PYTHONPATH}"
    log "starting bridge on $BRIDGE_HOST:$BRIDGE_PORT"
    "$BRIDGE_PYTHON" -m uvicorn bridge.main:app --host "$BRIDGE_HOST" --port "$BRIDGE_PORT" \
        --no-access-log --timeout-graceful-shutdown 5 &
fi
bridge_pid=$!

status=0
exited=""
wait -n -p exited "$vllm_pid" "$bridge_pid" || status=$?
if [[ "$exited" == "$vllm_pid" ]]; then
    vllm_pid=""
    log "error: vLLM exited (status $status); stopping the bridge"
else
    bridge_pid=""
    log "error: the bridge exited (status $status); stopping vLLM"
fi
trap - TERM INT
stop_children
exit $(( status == 0 ? 1 : status ))
