"""Run in a subprocess on a real X display: show the overlay with captions, grab the
screen, save the PNG and print the overlay's geometry as JSON."""

import json
import sys

from PySide6.QtCore import QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from captioner.realtime.captions import CaptionLine, CaptionUpdate
from captioner.settings import Settings
from captioner.ui.overlay import Overlay

# A real transcript (Dickens' public-domain opening, as the engine emits it) in sentences.
ROLL_UP = ["It was the best of times, it was the worst of times,",
           "it was the age of wisdom, it was the age of foolishness,",
           "it was the epoch of belief, it was the epoch of incredulity,"]


def main(out: str, preset: str, size: int = 32, text: str = "short") -> int:
    app = QApplication(sys.argv[:1])
    settings = Settings()
    a = settings.appearance
    a.preset, a.background_opacity, a.font_family, a.font_size = preset, 1.0, "DejaVu Sans", size
    a.dock = "bottom"
    overlay = Overlay(a)
    overlay.show()
    if text == "short":
        overlay.show_update(CaptionUpdate((CaptionLine("Real window captions.", 0, 1),),
                                          CaptionLine("live words here", 1, 2, final=False)))
    else:
        overlay.show_update(CaptionUpdate(
            tuple(CaptionLine(t, i, i + 1) for i, t in enumerate(ROLL_UP)),
            CaptionLine("it was the season of Light", 3, 4, final=False)))
    result = {}

    def shoot() -> None:
        screen = QGuiApplication.primaryScreen()
        image = screen.grabWindow(0).toImage()
        image.save(out)
        g = overlay.view.geometry().translated(overlay.geometry().topLeft())
        result.update(x=g.x(), y=g.y(), w=g.width(), h=g.height(),
                      screen=[screen.size().width(), screen.size().height()],
                      visible=overlay.view.visible_text(),
                      row_widths=[overlay.view.metrics.horizontalAdvance(t)
                                  for t, _ in overlay.view.visible_rows()],
                      text_width=overlay.view.width() - 20)
        app.quit()

    painted = []
    overlay.view.painted.connect(lambda: painted or (painted.append(1),
                                                     QTimer.singleShot(300, shoot)))
    QTimer.singleShot(10_000, app.quit)  # never hang the test
    app.exec()
    print(json.dumps(result))
    return 0 if result else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], *(
        int(arg) if arg.isdigit() else arg for arg in sys.argv[3:])))
