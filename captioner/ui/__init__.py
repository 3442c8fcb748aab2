"""The Qt desktop app: overlay, tray, settings, history. Qt is imported only here."""
