import json

from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QSlider,
)

from captioner import settings as settings_io
from captioner.audio.devices import AudioDevice
from captioner.audio.playback import WavSink
from captioner.aws import KeyringCredentials
from captioner.ui.endpoints.aws_setup import AccountSetupService
from captioner.ui.endpoints_page import EndpointsPage
from captioner.ui.reply_controller import ReplyController
from captioner.ui.settings.dialog import SettingsDialog
from captioner.ui.settings_store import SettingsStore
from tests.ui.conftest import run_async, wait_until
from tests.ui.endpoint_setup_support import TestClients, make_manager

DEVICES = [AudioDevice(1000, "Built-in mic", "mic", 1, 48000.0, is_default=True),
           AudioDevice(1001, "Monitor of Speakers", "system", 2, 48000.0, is_default=True)]


class MemoryKeys:
    """Stands in for the OS keyring (the edge of the system)."""

    def __init__(self):
        self.stored = None

    def store(self, access_key_id, secret_access_key):
        self.stored = (access_key_id, secret_access_key)

    def has_keys(self):
        return self.stored is not None


def make(qtbot, store, keys=None):
    dialog = SettingsDialog(store, devices=lambda: DEVICES, keys=keys or MemoryKeys())
    qtbot.addWidget(dialog)
    return dialog


def test_bad_websocket_url_is_explained_inline_and_nothing_changes(qtbot, store):
    dialog = make(qtbot, store)
    page = dialog.recognition
    page.websocket.setChecked(True)
    page.url.setText("http://example.com/v1/realtime")
    assert not dialog.apply()
    assert "ws:// or wss://" in page.error_text("url")
    assert dialog.tabs.currentWidget() is page
    assert store.settings.recognition.endpoint == "embedded"
    page.url.setText("wss://asr.example.com/v1/realtime")
    assert dialog.apply()
    assert page.error_text("url") == ""
    assert store.settings.recognition.endpoint == "wss://asr.example.com/v1/realtime"


def test_sagemaker_name_region_and_keys_are_validated(qtbot, store):
    keys = MemoryKeys()
    dialog = make(qtbot, store, keys)
    page = dialog.recognition
    page.sagemaker.setChecked(True)
    page.endpoint_name.setText("my_endpoint")
    page.region.setText("Frankfurt")
    page.use_keys.setChecked(True)
    page.key_id.setText("AKIAEXAMPLE")
    assert not dialog.apply()
    assert "letters, digits and hyphens" in page.error_text("endpoint_name")
    assert "not an AWS region" in page.error_text("region")
    assert "both" in page.error_text("key_id")
    assert "3 settings need fixing" in dialog.summary.text()

    page.endpoint_name.setText("voxtral-stt")
    page.region.setText("eu-central-1")
    page.key_id.setText("AKIAIOSFODNN7EXAMPLE")
    page.secret.setText("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    assert dialog.apply()
    assert keys.stored == ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    s = store.settings
    assert s.recognition.endpoint == "sagemaker://voxtral-stt?region=eu-central-1"
    assert s.aws.use_keyring and s.aws.region == "eu-central-1"
    assert page.secret.text() == ""
    text = settings_io.settings_path().read_text()
    assert "wJalrXUtnFEMI" not in text and "AKIAIOSFODNN7" not in text


KEY_ID, SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def with_endpoints_page(qtbot, store) -> tuple[SettingsDialog, EndpointsPage]:
    """The dialog as the app opens it: its Endpoints page keeps keys in the OS keyring."""
    dialog = make(qtbot, store)
    service = AccountSetupService(TestClients())
    page = EndpointsPage(make_manager(store, service), store, service)
    dialog.set_endpoints_page(page)
    return dialog, page


def test_access_keys_typed_on_the_endpoints_page_are_stored_on_apply(qtbot, store,
                                                                     memory_keyring):
    dialog, page = with_endpoints_page(qtbot, store)
    page.account.use_keys.click()
    page.account.key_id.setText(KEY_ID)
    page.account.secret.setText(SECRET)
    assert dialog.apply()
    creds = KeyringCredentials().get_credentials()
    assert (creds.access_key_id, creds.secret_access_key) == (KEY_ID, SECRET)
    assert store.settings.aws.use_keyring
    assert page.account.key_id.text() == "" and page.account.secret.text() == ""
    text = settings_io.settings_path().read_text()
    assert SECRET not in text and KEY_ID not in text


def test_a_keyring_that_refuses_the_keys_is_said_and_nothing_is_applied(qtbot, store,
                                                                        no_keyring):
    dialog, page = with_endpoints_page(qtbot, store)
    dialog.transcript.folder.setText(str(settings_io.settings_path().parent / "elsewhere"))
    page.account.use_keys.click()
    page.account.key_id.setText(KEY_ID)
    page.account.secret.setText(SECRET)
    assert not dialog.apply()
    refusal = "This desktop has no keyring service to keep AWS keys in"
    assert dialog.summary.text().startswith(refusal)
    assert page.account.error.text().startswith(refusal)
    assert page.account.error.isVisibleTo(page)
    assert dialog.tabs.currentWidget() is page
    # nothing changed; every typed value waits in the dialog for another try
    assert not store.settings.aws.use_keyring
    assert not store.settings.transcript.folder.endswith("elsewhere")
    assert page.account.key_id.text() == KEY_ID


def test_the_summary_of_a_failed_apply_goes_once_settings_are_saved(qtbot, store,
                                                                   no_keyring):
    """The keyring refused the keys; the user then picks a profile, and the Endpoints page
    saves the settings itself (Check account, Start): the old failure no longer holds."""
    dialog, page = with_endpoints_page(qtbot, store)
    page.account.use_keys.click()
    page.account.key_id.setText(KEY_ID)
    page.account.secret.setText(SECRET)
    assert not dialog.apply() and dialog.summary.text()
    page.account.use_profile.click()
    page.account.region.setCurrentText("eu-west-1")
    assert page.commit() is None  # what Check account and Start do first
    assert dialog.summary.text() == ""


def test_round_trip_through_the_settings_file(qtbot, store, config_dir):
    dialog = make(qtbot, store)
    dialog.audio.source.setCurrentIndex(dialog.audio.source.findData("both"))
    dialog.audio.mic_device.setCurrentIndex(dialog.audio.mic_device.findData("Built-in mic"))
    dialog.audio.latency.setCurrentIndex(dialog.audio.latency.findData(8192))
    dialog.appearance.preset.setCurrentIndex(dialog.appearance.preset.findData("black-on-white"))
    dialog.appearance.font_size.setValue(40)
    dialog.appearance.line_count.setValue(3)
    dialog.alerts.words.setPlainText("Ann\nquestion")
    changed = []
    store.changed.connect(changed.append)
    assert dialog.apply()
    assert changed and {"audio", "appearance", "alert_words"} <= set(changed[0])
    saved = json.loads((config_dir / "settings.json").read_text())
    assert saved["audio"]["source"] == "both" and saved["audio"]["chunk_bytes"] == 8192
    loaded = settings_io.load()
    assert loaded == store.settings
    assert loaded.audio.mic_device == "Built-in mic"
    assert dialog.audio.mic_device.currentText() == "Built-in mic"  # no device number
    assert loaded.appearance.preset == "black-on-white" and loaded.appearance.font_size == 40
    assert loaded.alert_words == ["Ann", "question"]
    again = make(qtbot, SettingsStore(loaded))
    assert again.appearance.font_size.value() == 40
    assert again.audio.source.currentData() == "both"


def test_custom_colour_folder_and_shortcut_conflicts(qtbot, store, tmp_path):
    dialog = make(qtbot, store)
    ap = dialog.appearance
    ap.preset.setCurrentIndex(ap.preset.findData("custom"))
    ap.text_color.setText("not-a-colour")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    dialog.transcript.folder.setText(str(blocker))
    dialog.shortcuts.edits["font_bigger"].setKeySequence(
        dialog.shortcuts.edits["start_stop"].keySequence())
    assert not dialog.apply()
    assert "is not a colour" in ap.error_text("text_color")
    assert "is a file, not a folder" in dialog.transcript.error_text("folder")
    assert "already used" in dialog.shortcuts.error_text("font_bigger")


def test_appearance_preview_follows_the_controls(qtbot, store):
    dialog = make(qtbot, store)
    ap = dialog.appearance
    # It shows every style the overlay draws, unconfirmed words (dimmer, italic) included.
    rows = ap.preview.visible_rows()
    assert any(not live for _, live in rows) and any(live for _, live in rows), rows
    ap.preset.setCurrentIndex(ap.preset.findData("white-on-black"))
    assert ap.preview.text_color.name() == "#ffffff"
    ap.font_size.setValue(50)
    assert ap.preview.font_final.pointSize() == 50
    assert store.settings.appearance.font_size != 50  # only applied on Apply


def test_every_control_has_an_accessible_name_and_endpoints_tab_is_reserved(qtbot, store):
    dialog = make(qtbot, store)
    kinds = (QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QPlainTextEdit, QSlider)
    controls = [w for kind in kinds for w in dialog.findChildren(kind)]
    unnamed = [w for w in controls
               if not w.accessibleName() and w.parent() is not None
               # Qt's own sub-widgets (clear buttons in line edits, the spin box's edit)
               and type(w.parent()).__name__ not in ("QFontComboBox", "QKeySequenceEdit",
                                                     "QSpinBox", "QDoubleSpinBox", "QLineEdit")
               and w.objectName() not in ("qt_spinbox_lineedit", "qt_keysequenceedit_lineedit")]
    assert len(controls) > 30
    assert [(type(w).__name__, w.text() if hasattr(w, "text") else "") for w in unnamed] == []
    titles = [dialog.tabs.tabText(i) for i in range(dialog.tabs.count())]
    assert "Endpoints" in titles



def test_two_speakers_are_chosen_and_renamed_on_the_audio_page(qtbot, store, config_dir):
    dialog = make(qtbot, store)
    page = dialog.audio
    assert not page.mic_label.isEnabled()  # names only matter for two speakers
    assert not page.echo_cancel.isEnabled()  # system audio alone: no microphone echo
    page.source.setCurrentIndex(page.source.findData("mic"))
    assert page.echo_cancel.isEnabled()  # the mic hears spoken replies (off: headphones)
    page.source.setCurrentIndex(page.source.findData("speakers"))
    assert page.mic_label.isEnabled() and page.echo_cancel.isChecked()
    assert page.mic_label.text() == "You" and page.system_label.text() == "Others"
    page.mic_label.setText("  ")
    page.system_label.setText("Team")
    assert not dialog.apply()
    assert "Give a name" in page.error_text("mic_label")
    assert not store.settings.audio.speakers
    page.mic_label.setText("team")
    assert not dialog.apply()
    assert "different" in page.error_text("system_label")
    page.mic_label.setText("Ana")
    assert dialog.apply()
    saved = json.loads((config_dir / "settings.json").read_text())["audio"]
    assert (saved["source"], saved["speakers"]) == ("both", True)
    assert (saved["mic_label"], saved["system_label"]) == ("Ana", "Team")
    again = make(qtbot, SettingsStore(settings_io.load()))
    assert again.audio.source.currentData() == "speakers"
    assert again.audio.mic_label.text() == "Ana"
    again.audio.source.setCurrentIndex(again.audio.source.findData("both"))
    assert again.apply()
    assert not again.store.settings.audio.two_streams


def test_the_voice_endpoint_for_replies_is_set_on_the_replies_page(qapp, qtbot, store,
                                                                   config_dir, omni_server):
    """Without hand-editing the settings file: a self-hosted voice endpoint is typed on the
    Replies page, checked, saved, and the next reply goes to it."""
    dialog = make(qtbot, store)
    page = dialog.replies
    assert page.endpoint.text() == "" and "computer's voice" in page.endpoint.placeholderText()
    page.endpoint.setText("embedded")
    assert not dialog.apply()
    assert "no embedded text-to-speech" in page.error_text("endpoint")
    page.endpoint.setText("http://example.com/speech")
    assert not dialog.apply() and page.error_text("endpoint")
    page.endpoint.setText(f"  {omni_server.url} ")
    assert dialog.apply()
    assert store.settings.tts.endpoint == omni_server.url
    assert settings_io.load().tts.endpoint == omni_server.url
    controller = ReplyController(store, sink_factory=lambda _d: WavSink(config_dir / "r.wav"))

    async def speak():
        controller.say("Hello from the settings.")
        await wait_until(lambda: omni_server.sessions and omni_server.sessions[0].texts, 10,
                         "the reply on the endpoint")
        await controller.aclose()

    run_async(qapp, speak)
    assert "".join(omni_server.sessions[0].texts) == "Hello from the settings."
