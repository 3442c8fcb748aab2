#!/usr/bin/env bash
# Build Captioner for macOS: Captioner.app (PyInstaller), self-test, then a .dmg.
# Usage: installer/build_macos.sh        (from a checkout with .venv set up)
# Env: PYTHON (default .venv/bin/python), CAPTIONER_DIST (default dist/),
#      CODESIGN_IDENTITY ("Developer ID Application: …"; default: ad-hoc signature).
# Build on the oldest macOS you support; the .app runs on that version and newer.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python="${PYTHON:-$root/.venv/bin/python}"
dist="${CAPTIONER_DIST:-$root/dist}"
work="${CAPTIONER_BUILD_DIR:-$root/build}"
version="$("$python" -c 'import captioner; print(captioner.__version__)')"

# The .icns the spec picks up, drawn from the PNG icon (sips and iconutil ship with macOS).
icns="resources/icons/captioner.icns"
if [[ ! -f "$icns" ]]; then
  iconset="$(mktemp -d)/captioner.iconset"
  mkdir -p "$iconset"
  for size in 16 32 64 128 256; do
    sips -z "$size" "$size" resources/icons/captioner.png --out "$iconset/icon_${size}x${size}.png" >/dev/null
    double=$((size * 2))
    sips -z "$double" "$double" resources/icons/captioner.png \
      --out "$iconset/icon_${size}x${size}@2x.png" >/dev/null
  done
  iconutil -c icns "$iconset" -o "$icns"
fi

start=$SECONDS
"$python" -m PyInstaller --noconfirm --clean --distpath "$dist" --workpath "$work/pyinstaller" \
  installer/captioner.spec
app="$dist/Captioner.app"
echo "build_macos: $app ($(du -sh "$app" | cut -f1)) in $((SECONDS - start)) s"

if [[ -n "${CODESIGN_IDENTITY:-}" ]]; then
  # Hardened runtime for notarization; the entitlement lets the microphone prompt appear.
  codesign --force --deep --options runtime --timestamp \
    --entitlements installer/macos/entitlements.plist \
    --sign "$CODESIGN_IDENTITY" "$app"
fi

# Self-test from outside the source tree, as a user would run it.
(cd "$(mktemp -d)" && env -u PYTHONPATH "$app/Contents/MacOS/captioner" --self-test)

"$root/installer/macos/make_dmg.sh" "$app" "$dist/Captioner-$version-macos-$(uname -m).dmg"
