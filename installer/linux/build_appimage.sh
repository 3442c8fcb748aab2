#!/usr/bin/env bash
# Package a built bundle (dist/captioner) as Captioner-VERSION-linux-ARCH.tar.gz: a folder
# with the app, its .desktop entry and icons, and install.sh (per-user or system-wide).
# The folder is also an AppDir, so with appimagetool on PATH an .AppImage is made too.
# Usage: installer/linux/build_appimage.sh BUNDLE_DIR OUT_DIR
set -euo pipefail
bundle="$(cd "${1:?usage: build_appimage.sh BUNDLE_DIR OUT_DIR}" && pwd)"
out="$(mkdir -p "${2:?usage: build_appimage.sh BUNDLE_DIR OUT_DIR}" && cd "$2" && pwd)"
root="$(cd "$(dirname "$0")/../.." && pwd)"
[[ -x "$bundle/captioner" ]] || { echo "build_appimage: no bundle at $bundle" >&2; exit 1; }

version="$(grep -m1 -oP '^__version__\s*=\s*"\K[^"]+' "$root/captioner/__init__.py")"
arch="$(uname -m)"
name="Captioner-$version-linux-$arch"
appdir="$out/$name"
rm -rf "$appdir"
mkdir -p "$appdir/lib" "$appdir/share/applications" \
  "$appdir/share/icons/hicolor/256x256/apps" "$appdir/share/icons/hicolor/scalable/apps"

cp -al "$bundle" "$appdir/lib/captioner" 2>/dev/null || cp -a "$bundle" "$appdir/lib/captioner"
cp "$root/resources/captioner.desktop" "$appdir/share/applications/captioner.desktop"
cp "$root/resources/icons/captioner.png" "$appdir/share/icons/hicolor/256x256/apps/captioner.png"
cp "$root/resources/icons/captioner.svg" "$appdir/share/icons/hicolor/scalable/apps/captioner.svg"
cp "$root/installer/linux/install.sh" "$appdir/install.sh"
# AppDir top level: AppRun, the desktop entry and the icon.
cp "$root/installer/linux/AppRun" "$appdir/AppRun"
chmod +x "$appdir/AppRun" "$appdir/install.sh"
cp "$root/resources/captioner.desktop" "$appdir/captioner.desktop"
cp "$root/resources/icons/captioner.png" "$appdir/captioner.png"
ln -sf captioner.png "$appdir/.DirIcon"
ln -sf AppRun "$appdir/captioner"

compress=(gzip -6)
command -v pigz >/dev/null && compress=(pigz -6)
# root-owned entries: unpacked by root, files must not belong to the build machine's user
tar -C "$out" --owner=0 --group=0 --numeric-owner -cf - "$name" \
  | "${compress[@]}" > "$out/$name.tar.gz"
echo "build_appimage: wrote $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1))"

if command -v appimagetool >/dev/null; then
  ARCH="$arch" appimagetool --no-appstream "$appdir" "$out/$name.AppImage"
  echo "build_appimage: wrote $out/$name.AppImage"
else
  echo "build_appimage: appimagetool not on PATH; skipped the .AppImage (the tarball is complete)"
fi
