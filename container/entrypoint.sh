#!/usr/bin/env bash
# Entrypoint of the Captioner STT image: `vllm serve` on port 8081 plus the
# WebSocket bridge that SageMaker talks to on 8080. See README.md for the
# SM_VLLM_* → `vllm serve` flag mapping and the other variables.
#
# Exits non-zero as soon as either process dies (SageMaker then replaces the
# container) and forwards SIGTERM/SIGINT to both.
#
# vLLM listens on 127.0.0.1 only: the bridge is the one way in. Nothing secret
# reaches the log: values of variables named like tokens/keys/secrets are masked
# in our own lines, and vLLM's and the bridge's output go through bridge.redact.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

BACKEND_PORT="${BACKEND_PORT:-8081}"
HEALTH_WAIT_TIMEOUT="${HEALTH_WAIT_TIMEOUT:-1200}"
HEALTH_POLL_INTERVAL="${HEALTH_POLL_INTERVAL:-2}"
MODEL_DIR="${MODEL_DIR:-/opt/ml/model}"
BRIDGE_HOST="${BRIDGE_HOST:-0.0.0.0}"
BRIDGE_PORT="${BRIDGE_PORT:-8080}"
BRIDGE_WS_MAX_SIZE="${BRIDGE_WS_MAX_SIZE:-1048576}"  # one client frame; ~8 KB are normal
BRIDGE_PYTHON="${BRIDGE_PYTHON:-python3}"
BRIDGE_APP_DIR="${BRIDGE_APP_DIR:-$here}"
BRIDGE_DEPS_DIR="${BRIDGE_DEPS_DIR:-$here/lib}"
VLLM_BIN="${VLLM_BIN:-vllm}"

SECRET_NAME_RE='(token|secret|password|passwd|api[-_]?key|credential)'
MIN_SECRET=6  # shorter values would mask ordinary text

is_secret_name() { [[ "${1,,}" =~ $SECRET_NAME_RE ]]; }

secret_values=()
while IFS= read -r name; do
    if is_secret_name "$name"; then
        value="${!name:-}"
        if (( ${#value} >= MIN_SECRET )); then secret_values+=("$value"); fi
    fi
done < <(compgen -e || true)

redact() {
    local text="$1" secret
    for secret in "${secret_values[@]}"; do
        text="${text//"$secret"/***}"
    done
    printf '%s' "$text"
}

log() { printf 'entrypoint: %s\n' "$(redact "$*")" >&2; }
die() { log "error: $*"; exit 1; }

[[ "$BACKEND_PORT" =~ ^[0-9]+$ ]] || die "BACKEND_PORT must be a port number, got '$BACKEND_PORT'"
[[ "$HEALTH_WAIT_TIMEOUT" =~ ^[0-9]+$ ]] \
    || die "HEALTH_WAIT_TIMEOUT must be whole seconds, got '$HEALTH_WAIT_TIMEOUT'"
[[ "$BRIDGE_WS_MAX_SIZE" =~ ^[0-9]+$ ]] \
    || die "BRIDGE_WS_MAX_SIZE must be a number of bytes, got '$BRIDGE_WS_MAX_SIZE'"

# --- SM_VLLM_* → vllm serve arguments ----------------------------------------
# SM_VLLM_MAX_MODEL_LEN=45000 → --max-model-len 45000; "true" → bare flag;
# "false" → flag left out; SM_VLLM_MODEL → the positional model.
model="${SM_VLLM_MODEL:-}"
vllm_args=()
shown_args=()  # the same, with secret values masked, for the log
while IFS= read -r name; do
    case "$name" in
        SM_VLLM_MODEL) continue ;;
        SM_VLLM_PORT)
            log "ignoring SM_VLLM_PORT: the bridge expects vLLM on BACKEND_PORT ($BACKEND_PORT)"
            continue ;;
        SM_VLLM_HOST)
            log "ignoring SM_VLLM_HOST: vLLM listens on 127.0.0.1, behind the bridge"
            continue ;;
    esac
    value="${!name}"
    flag="${name#SM_VLLM_}"
    flag="--${flag,,}"
    flag="${flag//_/-}"
    case "${value,,}" in
        true) vllm_args+=("$flag"); shown_args+=("$flag") ;;
        false) ;;
        *)
            vllm_args+=("$flag" "$value")
            if is_secret_name "$name"; then shown_args+=("$flag" "***")
            else shown_args+=("$flag" "$value"); fi ;;
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

# Child output is masked line by line (vLLM prints its arguments when it starts).
redacted() { PYTHONPATH="$BRIDGE_APP_DIR" "$BRIDGE_PYTHON" -u -m bridge.redact; }

log "starting: $VLLM_BIN serve $model ${shown_args[*]} --port $BACKEND_PORT --host 127.0.0.1"
"$VLLM_BIN" serve "$model" "${vllm_args[@]}" --port "$BACKEND_PORT" --host 127.0.0.1 \
    > >(redacted) 2>&1 &
vllm_pid=$!

# SECONDS ticks in whole seconds, so wait until it passes the deadline: at least the
# full timeout, never a fraction of it.
deadline=$(( SECONDS + HEALTH_WAIT_TIMEOUT ))
until backend_healthy; do
    if ! kill -0 "$vllm_pid" 2>/dev/null; then
        status=0
        wait "$vllm_pid" || status=$?
        vllm_pid=""
        die "vLLM exited (status $status) before it became healthy"
    fi
    if (( SECONDS > deadline )); then
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
    bash -c "$BRIDGE_CMD" > >(redacted) 2>&1 &
else
    export PYTHONPATH="$BRIDGE_DEPS_DIR:$BRIDGE_APP_DIR${PYTHONPATH:+:$PYTHONPATH}"
    log "starting bridge on $BRIDGE_HOST:$BRIDGE_PORT"
    "$BRIDGE_PYTHON" -m uvicorn bridge.main:app --host "$BRIDGE_HOST" --port "$BRIDGE_PORT" \
        --no-access-log --timeout-graceful-shutdown 5 --ws-max-size "$BRIDGE_WS_MAX_SIZE" \
        > >(redacted) 2>&1 &
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
