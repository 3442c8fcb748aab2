"""Step 1 of the set-up: which AWS credentials and region, checked live.

A profile from the AWS config (SSO, assume-role and key profiles all work) or
access keys kept in the OS keyring. Saving the page (Start, "Check account", the
dialog's OK/Apply) stores typed keys in the keyring (never in settings); "Check
account" then asks STS who they are and shows the account and principal — or the
reason they do not work.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QWidget,
)

from captioner.aws import CredentialsError
from captioner.cloud.account import CallerIdentity
from captioner.settings import AwsSettings
from captioner.ui.endpoints.page_parts import ERROR_SHADES, OK_SHADES, color_style
from captioner.ui.endpoints.runner import Runner
from captioner.ui.endpoints.service import SetupService
from captioner.ui.settings import validation as v
from captioner.ui.settings.common import ErrorLabel
from captioner.ui.settings.recognition_page import KeyStore, keys_stored

log = logging.getLogger(__name__)

REGIONS = ("us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "eu-west-2",
           "eu-north-1", "ap-northeast-1", "ap-southeast-1", "ap-southeast-2", "ap-south-1",
           "ca-central-1", "sa-east-1")
DEFAULT_CHAIN = "(default credentials)"


class AccountBox(QGroupBox):
    """Credentials + region + live check; ``identity`` is the last good answer."""

    checked = Signal(object)  # CallerIdentity | None

    def __init__(self, service: SetupService, runner: Runner, keys: KeyStore,
                 commit: Callable[[], str | None], parent: QWidget | None = None) -> None:
        super().__init__("1. AWS account", parent)
        self.setAccessibleName("AWS account")
        self.service, self.runner, self.keys = service, runner, keys
        self.commit = commit  # saves the page into settings; returns an error or None
        self.identity: CallerIdentity | None = None
        form = QFormLayout(self)
        self.use_profile = QRadioButton("AWS &profile (SSO, assume-role or keys in ~/.aws)")
        self.use_keys = QRadioButton("Access &keys, kept in the OS keyring")
        self.mode = QButtonGroup(self)
        for i, radio in enumerate((self.use_profile, self.use_keys)):
            radio.setAccessibleName(radio.text().replace("&", ""))
            self.mode.addButton(radio, i)
            form.addRow(radio)
        self.profile = QComboBox()
        self.profile.setEditable(True)
        self.profile.setAccessibleName("AWS profile name")
        self._row(form, "Pro&file:", self.profile)
        self.key_id = QLineEdit()
        self.key_id.setAccessibleName("Access key ID")
        self._row(form, "Access key I&D:", self.key_id)
        self.secret = QLineEdit()
        self.secret.setEchoMode(QLineEdit.EchoMode.Password)
        self.secret.setAccessibleName("Secret access key")
        self._row(form, "Secret access ke&y:", self.secret)
        self.keys_note = QLabel()
        self.keys_note.setAccessibleName("Stored keys")
        self.keys_note.setWordWrap(True)
        form.addRow(self.keys_note)
        self.region = QComboBox()
        self.region.setEditable(True)
        self.region.addItems(REGIONS)
        self.region.setAccessibleName("AWS region")
        self._row(form, "Re&gion:", self.region)
        self.error = ErrorLabel("AWS account")
        form.addRow(self.error)
        self.check_button = QPushButton("&Check account")
        self.check_button.setAccessibleName("Check the AWS account")
        self.result = QLabel("Not checked yet.")
        self.result.setWordWrap(True)
        self.result.setAccessibleName("AWS account check result")
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row = QHBoxLayout()
        row.addWidget(self.check_button)
        row.addWidget(self.result, 1)
        form.addRow(row)
        self.mode.idToggled.connect(lambda *_: self._enable())
        self.check_button.clicked.connect(self.check)

    def _row(self, form: QFormLayout, text: str, widget: QWidget) -> None:
        label = QLabel(text)
        label.setBuddy(widget)
        form.addRow(label, widget)

    def _enable(self) -> None:
        self.profile.setEnabled(self.use_profile.isChecked())
        for w in (self.key_id, self.secret):
            w.setEnabled(self.use_keys.isChecked())

    def _stored(self) -> bool:
        return keys_stored(self.keys)

    # ---- settings ----------------------------------------------------------------------

    def load(self, aws: AwsSettings) -> None:
        (self.use_keys if aws.use_keyring else self.use_profile).setChecked(True)
        self.profile.setCurrentText(aws.profile or DEFAULT_CHAIN)
        self.region.setCurrentText(aws.region)
        self.key_id.clear()
        self.secret.clear()
        self.keys_note.setText("Keys are stored in the OS keyring; leave the fields empty "
                               "to keep them." if self._stored() else "")
        self.keys_note.setVisible(bool(self.keys_note.text()))
        self._enable()
        if _loop_running():  # the profile list is a convenience: typing a name works too
            self.runner.call(self.service.profiles, done=self._fill_profiles,
                             failed=lambda e: log.info("! AWS profiles not listed: %s", e))

    def _fill_profiles(self, names: list[str]) -> None:
        current = self.profile.currentText()
        self.profile.clear()
        self.profile.addItems([DEFAULT_CHAIN, *names])
        self.profile.setCurrentText(current)

    def write(self, aws: AwsSettings) -> str | None:
        """Copy into ``aws``; returns an error message (nothing copied) or None."""
        region = self.region.currentText().strip()
        profile = self.profile.currentText().strip()
        profile = "" if profile == DEFAULT_CHAIN else profile
        error = v.region_error(region) or v.profile_error(profile)
        if self.use_keys.isChecked() and error is None:
            error = v.access_keys_error(self.key_id.text(), self.secret.text(),
                                        stored=self._stored())
        self.error.show_error(error)
        if error is not None:
            return error
        aws.region = region
        aws.use_keyring = self.use_keys.isChecked()
        aws.profile = None if aws.use_keyring else (profile or None)
        return None

    def commit_secrets(self) -> str | None:
        """After validation passed: store typed keys in the keyring, then clear the fields.

        Every save of the page comes here: settings saying "keys" without the keys
        stored would fail at the first AWS call. Returns the keyring's refusal or None.
        """
        key_id, secret = self.key_id.text().strip(), self.secret.text().strip()
        if not (self.use_keys.isChecked() and key_id):
            return None
        try:
            self.keys.store(key_id, secret)
        except CredentialsError as exc:
            self.error.show_error(str(exc))
            return str(exc)
        self.key_id.clear()
        self.secret.clear()
        self.keys_note.setText("Keys are stored in the OS keyring.")
        self.keys_note.show()
        return None

    # ---- the live check ----------------------------------------------------------------

    def check(self) -> None:
        """Save the settings (typed keys to the keyring), then ask STS who we are (off the GUI)."""
        self.check_button.setEnabled(False)
        self.result.setText("Checking…")
        self.result.setStyleSheet("")
        error = self.commit()
        if error is not None:
            self._failed(error)
            return
        aws = AwsSettings()
        self.write(aws)
        self.runner.call(self.service.identity, aws, done=self._identified, failed=self._failed)

    def _identified(self, identity: CallerIdentity) -> None:
        self.identity = identity
        self.check_button.setEnabled(True)
        self.result.setText(f"✔ Account {identity.account} — {identity.display_name}")
        self.result.setStyleSheet(color_style(OK_SHADES, self))
        self.result.setAccessibleDescription(self.result.text())
        self.checked.emit(identity)

    def _failed(self, message: str) -> None:
        self.identity = None
        self.check_button.setEnabled(True)
        self.result.setText(f"✘ {message}")
        self.result.setStyleSheet(color_style(ERROR_SHADES, self))
        self.result.setAccessibleDescription(self.result.text())
        self.checked.emit(None)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


__all__ = ["DEFAULT_CHAIN", "REGIONS", "AccountBox"]
