""""Create this role?" — shows the exact trust and permission policy before anything exists.

Opened with ``open()`` (never ``exec()``: a nested loop would break the running
asyncio task); ``accepted`` means create. Cancel is the default button, so Enter
alone creates nothing.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from captioner.cloud.account import PERMISSION_POLICY_NAME
from captioner.ui.endpoints.service import RoleProposal


def policy_view(name: str, document: str) -> QPlainTextEdit:
    view = QPlainTextEdit(document)
    view.setReadOnly(True)
    view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    view.setAccessibleName(name)
    view.setTabChangesFocus(True)
    return view


def cancel_first_buttons(dialog: QDialog, text: str, name: str
                         ) -> tuple[QDialogButtonBox, QPushButton, QPushButton]:
    """The buttons of a dialog that creates things in AWS: ``text`` accepts, Cancel is the
    default (Enter alone creates nothing)."""
    buttons = QDialogButtonBox()
    accept = buttons.addButton(text, QDialogButtonBox.ButtonRole.AcceptRole)
    cancel = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
    accept.setAccessibleName(name)
    cancel.setAccessibleName("Cancel: create nothing")
    accept.setAutoDefault(False)
    cancel.setDefault(True)
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    return buttons, accept, cancel


class RoleDialog(QDialog):
    def __init__(self, proposal: RoleProposal, noun: str, parent: QWidget | None = None
                 ) -> None:
        super().__init__(parent)
        self.proposal = proposal
        self.setWindowTitle(f"Create the execution role {proposal.name}?")
        self.setAccessibleName("Create execution role")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        intro = QLabel(
            f"Captioner will create the IAM role <b>{proposal.name}</b> in account "
            f"{proposal.account} for the {noun}. SageMaker assumes it to pull the "
            "image and the model and to write the endpoint's logs — nothing else.")
        intro.setWordWrap(True)
        self.trust_view = policy_view("Trust policy", proposal.policies.trust_json())
        self.permission_view = policy_view(f"Permission policy {PERMISSION_POLICY_NAME}",
                                            proposal.policies.permissions_json())
        trust_label = QLabel("&Trust policy (who may assume it):")
        trust_label.setBuddy(self.trust_view)
        permission_label = QLabel(f"&Permission policy “{PERMISSION_POLICY_NAME}”:")
        permission_label.setBuddy(self.permission_view)
        buttons, self.create_button, self.cancel_button = cancel_first_buttons(
            self, "&Create role", f"Create the role {proposal.name}")
        layout = QVBoxLayout(self)
        for widget in (intro, trust_label, self.trust_view, permission_label,
                       self.permission_view, buttons):
            layout.addWidget(widget)
        self.resize(640, 560)


__all__ = ["RoleDialog", "cancel_first_buttons", "policy_view"]
