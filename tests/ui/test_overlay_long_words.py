"""The overlay shows every character of text without spaces (Chinese, Japanese, a URL):
it is broken across rows no wider than the view, not clipped at its right edge."""

from __future__ import annotations

from captioner.realtime.captions import CaptionLine, CaptionModel, CaptionUpdate
from captioner.ui.caption_view import PADDING, CaptionView

ZH = ("我们今天讨论的是关于气候变化对农业生产的影响以及各国政府应该采取什么样的措施来应对"
      "这一挑战因为这个问题关系到每一个人的生活和未来的发展所以非常重要")
URL = "see https://example.com/a/very/long/path/to/the/document/we/discussed/today.html ok"


def make_view(qtbot, settings, width: int = 900) -> CaptionView:
    settings.appearance.font_family = "DejaVu Sans"
    settings.appearance.lines = 5
    view = CaptionView(settings.appearance)
    qtbot.addWidget(view)
    view.resize(width, view.sizeHint().height())
    view.show()
    qtbot.waitExposed(view)
    return view


def assert_all_seen(view: CaptionView, text: str) -> list[str]:
    """Every row fits the view, and the rows are ``text`` (a break drops only a space)."""
    rows = [row for row, _ in view.visible_rows()]
    width = view.width() - 2 * PADDING
    for row in rows:
        assert view.metrics.horizontalAdvance(row) <= width, row
        assert view.metrics_live.horizontalAdvance(row) <= width, row
    assert "".join(rows).replace(" ", "") == text.replace(" ", "")
    assert not view.grab().isNull()
    return rows


def test_chinese_from_the_caption_model_is_seen_whole(qtbot, settings):
    view = make_view(qtbot, settings)
    model = CaptionModel()
    lines = model.add_text(ZH, 1.0).finalized + model.flush().finalized
    view.show_update(CaptionUpdate(lines, None))
    assert len(assert_all_seen(view, ZH)) == 4


def test_a_url_is_broken_across_rows(qtbot, settings):
    view = make_view(qtbot, settings)
    view.show_update(CaptionUpdate((CaptionLine(URL, 0, 1),), None))
    rows = assert_all_seen(view, URL)
    assert rows[0] == "see" and rows[-1].endswith("today.html ok")


def test_a_live_line_in_pieces_keeps_its_confirmed_words_confirmed(qtbot, settings):
    view = make_view(qtbot, settings)
    view.show_update(CaptionUpdate((), CaptionLine(ZH, 0, 1, final=False), "好的"))
    assert_all_seen(view, ZH + "好的")
    assert [live for _, live in view.visible_rows()] == [False, False, False, True]
    assert view.visible_rows()[-1][0].endswith("重要 好的")


def test_a_row_of_chinese_is_as_wide_as_a_row_of_latin_text(qtbot, settings):
    settings.appearance.row_chars = 42
    view = make_view(qtbot, settings, width=2400)  # wide: the row length decides
    view.show_update(CaptionUpdate((CaptionLine(ZH, 0, 1),), None))
    rows = assert_all_seen(view, ZH)
    assert [len(row) for row in rows] == [21, 21, 21, 10]  # two columns each
