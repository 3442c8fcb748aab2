#!/usr/bin/env bash
# Pack Captioner.app into a compressed, drag-to-Applications disk image (macOS only).
# Usage: installer/macos/make_dmg.sh dist/Captioner.app dist/Captioner-0.1.0-macos.dmg
# Set CODESIGN_IDENTITY="Developer ID Application: …" to sign the image too (the app
# itself is signed by build_macos.sh); notarize afterwards with `xcrun notarytool`.
set -euo pipefail

app="${1:?usage: make_dmg.sh APP DMG}"
dmg="${2:?usage: make_dmg.sh APP DMG}"
[[ -d "$app" ]] || { echo "make_dmg: no app bundle at $app" >&2; exit 1; }
command -v hdiutil >/dev/null || { echo "make_dmg: hdiutil not found (macOS only)" >&2; exit 1; }

staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
cp -R "$app" "$staging/"
ln -s /Applications "$staging/Applications"

rm -f "$dmg"
hdiutil create -volname "Captioner" -srcfolder "$staging" -fs HFS+ \
  -format UDZO -imagekey zlib-level=9 -ov "$dmg"

if [[ -n "${CODESIGN_IDENTITY:-}" ]]; then
  codesign --force --sign "$CODESIGN_IDENTITY" --timestamp "$dmg"
fi
echo "make_dmg: wrote $dmg ($(du -h "$dmg" | cut -f1))"
