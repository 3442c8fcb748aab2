#!/usr/bin/env bash
# Install Captioner from this unpacked folder: the app, a `captioner` command, the menu
# entry and the icon. Per user by default (~/.local); `sudo ./install.sh --system` for
# /opt + /usr/local. `./install.sh --uninstall [--system]` removes what it installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
system=0 uninstall=0
for arg in "$@"; do
  case "$arg" in
    --system) system=1 ;;
    --uninstall) uninstall=1 ;;
    *) echo "usage: install.sh [--system] [--uninstall]" >&2; exit 2 ;;
  esac
done
if ((system)); then
  app=/opt/captioner bin=/usr/local/bin share=/usr/local/share
else
  app="$HOME/.local/opt/captioner" bin="$HOME/.local/bin" share="$HOME/.local/share"
fi
icons="$share/icons/hicolor"

if ((uninstall)); then
  rm -rf "$app"
  rm -f "$bin/captioner" "$share/applications/captioner.desktop" \
    "$icons/256x256/apps/captioner.png" "$icons/scalable/apps/captioner.svg"
  echo "Captioner removed (settings and transcripts in your home folder are kept)."
  exit 0
fi

mkdir -p "$app" "$bin" "$share/applications" "$icons/256x256/apps" "$icons/scalable/apps"
rm -rf "$app"
# Owned by whoever installs (root for --system), never by whoever unpacked the tarball:
# a user owning /opt/captioner could swap the program root and everyone else run.
cp -a --no-preserve=ownership "$here/lib/captioner" "$app"
ln -sf "$app/captioner" "$bin/captioner"
sed "s|^Exec=.*|Exec=$app/captioner|" "$here/share/applications/captioner.desktop" \
  > "$share/applications/captioner.desktop"
cp "$here/share/icons/hicolor/256x256/apps/captioner.png" "$icons/256x256/apps/"
cp "$here/share/icons/hicolor/scalable/apps/captioner.svg" "$icons/scalable/apps/"
if command -v update-desktop-database >/dev/null; then
  update-desktop-database -q "$share/applications" || true
fi
if command -v gtk-update-icon-cache >/dev/null; then
  gtk-update-icon-cache -q -t "$icons" || true
fi

echo "Captioner installed in $app; run 'captioner' or pick it from the menu."
echo "Check it with: $bin/captioner --self-test"
case ":$PATH:" in *":$bin:"*) ;; *) echo "(add $bin to your PATH to type 'captioner')" ;; esac
