""""Build the captions image in your account?" — everything the build creates, its role's
exact policies and its cost, before anything exists.

Opened with ``open()`` like the role dialog; ``accepted`` means build. Cancel is the
default button, so Enter alone creates nothing.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QLabel, QVBoxLayout, QWidget

from captioner.cloud import image_build as ib
from captioner.cloud.images import DEFAULT_STT_REPOSITORY
from captioner.ui.endpoints.role_dialog import cancel_first_buttons, policy_view


class BuildDialog(QDialog):
    def __init__(self, plan: ib.BuildPlan, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plan = plan
        self.setWindowTitle("Build the captions image in your AWS account?")
        self.setAccessibleName("Build the captions image")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        intro = QLabel(
            f"Captioner will build its captions image with AWS CodeBuild in account "
            f"{plan.account} ({plan.region}) and push it to Amazon ECR as "
            f"<b>{plan.image_uri}</b>. Nothing is needed on this computer.<br><br>"
            "It creates what is missing: the ECR repository "
            f"<b>{DEFAULT_STT_REPOSITORY}</b>; the private S3 bucket <b>{plan.bucket}</b> "
            f"for the build files (about 40 KB); the IAM role <b>{ib.ROLE_NAME}</b> "
            f"(below); the CodeBuild project <b>{ib.PROJECT}</b>.<br><br>"
            f"Cost: {plan.estimate}. The build goes on in AWS if you close Captioner.")
        intro.setWordWrap(True)
        policies = plan.role_policies()
        self.trust_view = policy_view("Build role trust policy", policies.trust_json())
        self.permission_view = policy_view(f"Build role permission policy {ib.POLICY_NAME}",
                                           policies.permissions_json())
        trust_label = QLabel("&Trust policy of the build role (who may assume it):")
        trust_label.setBuddy(self.trust_view)
        permission_label = QLabel(f"&Permission policy “{ib.POLICY_NAME}”:")
        permission_label.setBuddy(self.permission_view)
        buttons, self.build_button, self.cancel_button = cancel_first_buttons(
            self, "&Build image", "Build the image in AWS CodeBuild")
        layout = QVBoxLayout(self)
        for widget in (intro, trust_label, self.trust_view, permission_label,
                       self.permission_view, buttons):
            layout.addWidget(widget)
        self.resize(680, 620)


__all__ = ["BuildDialog"]
