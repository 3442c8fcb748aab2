"""Step 2 of the set-up, per kind (captions STT, replies TTS): what to deploy, checked.

Image, model, execution role (chosen from the roles that trust SageMaker, or
created after the exact policies are shown), instance pool with prices and
autoscaling; then the preflight list and the endpoint's own Start/Stop row.
Lists come from AWS through the runner, never from a GUI slot.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from captioner.cloud.account import RoleInfo
from captioner.cloud.deploy_plan import (
    DEFAULT_STT_MODEL,
    MAX_LIFETIME_HOURS,
    TTS_MODEL_ID,
    Kind,
    tts_image,
)
from captioner.cloud.images import (
    DEFAULT_STT_REPOSITORY,
    ImageCandidate,
    build_and_push_command,
)
from captioner.cloud.scaling import MAX_INSTANCES
from captioner.settings import EndpointDeploySettings
from captioner.ui.endpoints.page_parts import ERROR_SHADES, color_style
from captioner.ui.endpoints.pool_editor import PoolEditor
from captioner.ui.endpoints.preflight_list import PreflightList
from captioner.ui.endpoints.status_row import KIND_NOUNS, EndpointRow
from captioner.ui.settings.common import ErrorLabel

# preflight section (CheckId.section) → the field key that fixes it
FIELD_OF_SECTION = {"role": "role", "image": "image", "model": "model", "quota": "pool",
                    "price": "pool"}


class KindSetup(QWidget):
    """Everything about one kind's endpoint; the page wires its buttons to AWS."""

    check_requested = Signal()
    create_role_requested = Signal()
    build_image_requested = Signal()
    remove_image_requested = Signal()
    refresh_requested = Signal()
    edited = Signal()  # a field the preflight reads changed (its results are stale)

    def __init__(self, kind: Kind, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.kind = kind
        noun = KIND_NOUNS[kind]
        self.setAccessibleName(f"{noun} set-up")
        self.errors: dict[str, ErrorLabel] = {}
        self.fields: dict[str, QWidget] = {}
        form = QFormLayout()

        self.image = QComboBox()
        self.image.setEditable(True)
        self.image.lineEdit().setPlaceholderText(
            "ACCOUNT.dkr.ecr.REGION.amazonaws.com/captioner-stt:latest" if kind == "stt"
            else "AWS's vLLM-Omni image for the region")
        self.refresh_button = QPushButton("&Refresh lists")
        self.refresh_button.setAccessibleName(f"Refresh the {noun} image and role lists")
        self.build_hint = QLabel()
        self.build_hint.setWordWrap(True)
        self.build_hint.setAccessibleName("How to build the captions image")
        self.build_command = QLineEdit()
        self.build_command.setReadOnly(True)
        self.build_command.setAccessibleName("Command that builds and pushes the image")
        self.copy_button = QPushButton("Cop&y")
        self.copy_button.setAccessibleName("Copy the build command")
        self.build_button = QPushButton("&Build it in my account…")
        self.build_button.setAccessibleName("Build the captions image in your AWS account "
                                            "(CodeBuild, no Docker needed)")
        self.build_status = QLabel()
        self.build_status.setWordWrap(True)
        self.build_status.setAccessibleName("Image build progress")
        self.build_status.hide()
        self.command_hint = QLabel("Or build and push it from a clone of Captioner with "
                                   "Docker:")
        self.command_hint.setWordWrap(True)
        self.build_offer = QWidget()  # the ways to build one: shown while there is none
        offer = QVBoxLayout(self.build_offer)
        offer.setContentsMargins(0, 0, 0, 0)
        offer.addWidget(self.build_hint)
        row = QHBoxLayout()
        row.addWidget(self.build_button)
        row.addStretch(1)
        offer.addLayout(row)
        offer.addWidget(self.command_hint)
        row = QHBoxLayout()
        row.addWidget(self.build_command, 1)
        row.addWidget(self.copy_button)
        offer.addLayout(row)
        self.remove_button = QPushButton("Remo&ve the image from AWS…")
        self.remove_button.setAccessibleName("Remove the captions image and what built it "
                                             "from your AWS account")
        self.remove_button.setToolTip("The image costs ECR storage every month; remove it "
                                      "when you no longer use cloud captions.")
        self.remove_row = QWidget()  # shown once the account holds Captioner's image
        row = QHBoxLayout(self.remove_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.remove_button)
        row.addStretch(1)
        self.remove_row.hide()
        self.build_box = QWidget()
        build = QVBoxLayout(self.build_box)
        build.setContentsMargins(0, 0, 0, 0)
        build.addWidget(self.build_offer)
        build.addWidget(self.build_status)
        self.build_box.hide()
        self._field(form, "image", "&Image:", self.image, f"{noun} image",
                    extra=self.refresh_button, below=(self.build_box, self.remove_row))

        self.model = QLineEdit()
        self.model.setPlaceholderText(DEFAULT_STT_MODEL if kind == "stt" else TTS_MODEL_ID)
        model_note = QLabel("A Hugging Face model id (empty: the default above), or an "
                            "s3://bucket/prefix/ holding the model files.")
        model_note.setWordWrap(True)
        self._field(form, "model", "&Model:", self.model, f"{noun} model source",
                    below=(model_note,))

        self.role = QComboBox()
        self.role.setEditable(True)
        self.role.lineEdit().setPlaceholderText("arn:aws:iam::ACCOUNT:role/NAME")
        self.create_role_button = QPushButton("Cr&eate role…")
        self.create_role_button.setAccessibleName(f"Create an execution role for the {noun}")
        self.role_note = QLabel("Roles that trust SageMaker appear here after the account "
                                "check.")
        self.role_note.setWordWrap(True)
        self.role_note.setAccessibleName(f"{noun} role list note")
        self._field(form, "role", "E&xecution role:", self.role, f"{noun} execution role",
                    extra=self.create_role_button, below=(self.role_note,))

        self.pool = PoolEditor(noun)
        self._field(form, "pool", "Ins&tance pool:", self.pool, f"{noun} instance pool")

        self.autoscale = QCheckBox("&Autoscale between")
        self.scale_min = QSpinBox()
        self.scale_max = QSpinBox()
        for box, name in ((self.scale_min, "fewest"), (self.scale_max, "most")):
            box.setRange(1, MAX_INSTANCES)
            box.setAccessibleName(f"{noun}: {name} instances when autoscaling")
        self.autoscale.setAccessibleName(f"{noun}: autoscale with load")
        scale_row = QWidget()
        scale = QHBoxLayout(scale_row)
        scale.setContentsMargins(0, 0, 0, 0)
        for w in (self.autoscale, self.scale_min, QLabel("and"), self.scale_max,
                  QLabel("instances")):
            scale.addWidget(w)
        scale.addStretch(1)
        self._field(form, "autoscale", "Scaling:", scale_row, f"{noun} scaling")

        self.lifetime = QDoubleSpinBox()
        self.lifetime.setRange(0.0, MAX_LIFETIME_HOURS)
        self.lifetime.setDecimals(1)
        self.lifetime.setSingleStep(1.0)
        self.lifetime.setSuffix(" h")
        self.lifetime.setSpecialValueText("off — nothing deletes it unless you stop it")
        lifetime_note = QLabel("AWS itself deletes the endpoint this long after it starts "
                               "(a schedule in your account), so it holds even if this "
                               "computer sleeps or Captioner is closed; Captioner moves it "
                               "on while you use the endpoint.")
        lifetime_note.setWordWrap(True)
        self._field(form, "lifetime", "Maximum &lifetime:", self.lifetime,
                    f"{noun} maximum lifetime (hours)", below=(lifetime_note,))

        self.check_button = QPushButton("C&heck set-up")
        self.check_button.setAccessibleName(f"Check the {noun} set-up")
        self.preflight = PreflightList(noun)
        self.preflight.fallback_focus = self.check_button
        self.row = EndpointRow(kind)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        title = QLabel("<b>Preflight</b> — every line must pass before the endpoint starts:")
        layout.addWidget(title)
        layout.addWidget(self.check_button)
        layout.addWidget(self.preflight)
        layout.addWidget(self.row)

        self.autoscale.toggled.connect(self._enable)
        self.check_button.clicked.connect(self.check_requested.emit)
        self.create_role_button.clicked.connect(self.create_role_requested.emit)
        self.refresh_button.clicked.connect(self.refresh_requested.emit)
        self.copy_button.clicked.connect(self._copy)
        self.build_button.clicked.connect(self.build_image_requested.emit)
        self.remove_button.clicked.connect(self.remove_image_requested.emit)
        for combo in (self.image, self.role):  # long URIs/ARNs: the whole text on hover
            combo.currentTextChanged.connect(combo.setToolTip)
        for changed in (self.image.currentTextChanged, self.model.textChanged,
                        self.role.currentTextChanged, self.pool.changed,
                        self.autoscale.toggled, self.scale_min.valueChanged,
                        self.scale_max.valueChanged):
            changed.connect(lambda *_: self.edited.emit())

    def _field(self, form: QFormLayout, key: str, text: str, widget: QWidget, name: str,
               extra: QWidget | None = None, below: tuple[QWidget, ...] = ()) -> None:
        """A labelled row: the field (and a button), notes under it, then its error label
        — one form row, so hidden notes and errors leave no gaps."""
        if not widget.accessibleName():
            widget.setAccessibleName(name)
        label = QLabel(text)
        label.setBuddy(widget)
        self.errors[key] = ErrorLabel(name)
        self.fields[key] = widget
        holder = QWidget()
        column = QVBoxLayout(holder)
        column.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(widget, 1)
        if extra is not None:
            row.addWidget(extra)
        column.addLayout(row)
        for w in (*below, self.errors[key]):
            column.addWidget(w)
        form.addRow(label, holder)

    def _enable(self) -> None:
        for box in (self.scale_min, self.scale_max):
            box.setEnabled(self.autoscale.isChecked())

    def _copy(self) -> None:
        QGuiApplication.clipboard().setText(self.build_command.text())
        self.command_hint.setText(self.command_hint.text().split(" (copied)")[0] + " (copied)")

    def set_build_status(self, text: str, *, busy: bool = False, failed: bool = False
                         ) -> None:
        """The image build's progress or outcome ("" hides it); the box stays in view
        while there is one, images or not."""
        self.build_status.setText(text)
        self.build_status.setAccessibleDescription(text)
        self.build_status.setStyleSheet(color_style(ERROR_SHADES, self) if failed else "")
        self.build_status.setVisible(bool(text))
        self.build_button.setEnabled(not busy)
        self.remove_button.setEnabled(not busy)
        if text:
            self.build_box.show()

    # ---- lists from AWS ------------------------------------------------------------------

    def set_images(self, images: list[ImageCandidate], region: str, account: str,
                   profile: str | None) -> None:
        current = self.image.currentText().strip()
        self.image.clear()
        uris = [i.uri for i in images]
        if self.kind == "tts":
            uris.insert(0, tts_image(region))
        self.image.addItems(uris)
        self.image.setCurrentText(current or (uris[0] if uris else ""))
        none = self.kind == "stt" and not images
        if none:
            prefix = f"AWS_PROFILE={profile} " if profile else ""
            self.build_command.setText(prefix + build_and_push_command(region, account))
            self.build_hint.setText(
                f"No images in Amazon ECR in {region} yet. Captioner can have AWS build "
                "its captions image in your account (CodeBuild; nothing to install here):")
        self.build_offer.setVisible(none)
        self.remove_row.setVisible(self.kind == "stt" and any(
            i.repository == DEFAULT_STT_REPOSITORY for i in images))
        self.build_box.setVisible(none or bool(self.build_status.text()))

    def set_roles(self, roles: list[RoleInfo]) -> None:
        current = self.role_arn()
        self.role.clear()
        for role in roles:
            self.role.addItem(role.arn)
        self.role.setCurrentText(current or (roles[0].arn if len(roles) == 1 else ""))
        self.role_note.setText(
            f"{len(roles)} role{'s' * (len(roles) != 1)} in this account trust SageMaker."
            if roles else "No role in this account trusts SageMaker yet: press Create role.")

    def role_arn(self) -> str:
        return self.role.currentText().strip()

    # ---- settings ------------------------------------------------------------------------

    def load(self, plan: EndpointDeploySettings, region: str, candidates: list[str],
             price_of) -> None:
        self.image.setCurrentText(plan.image_uri)
        self.model.setText(plan.model_source)
        self.role.setCurrentText(plan.role_arn)
        self.pool.fill(plan.instance_types, candidates, price_of)
        on = plan.autoscale_min > 0
        self.autoscale.setChecked(on)
        self.scale_min.setValue(max(1, plan.autoscale_min))
        self.scale_max.setValue(max(1, plan.autoscale_max))
        self.lifetime.setValue(plan.max_lifetime_hours)
        self._enable()
        self.preflight.set_accepted(plan.accepted_unknown)

    def write(self, plan: EndpointDeploySettings) -> dict[str, str]:
        errors: dict[str, str] = {}
        image = self.image.currentText().strip()
        if any(c.isspace() for c in image):
            errors["image"] = "An image URI has no spaces."
        model = self.model.text().strip()
        if any(c.isspace() for c in model):
            errors["model"] = "A model id or s3:// prefix has no spaces."
        types = self.pool.chosen()
        if not 1 <= len(types) <= 5:
            errors["pool"] = "Tick 1 to 5 instance types."
        if self.autoscale.isChecked() and self.scale_min.value() > self.scale_max.value():
            errors["autoscale"] = "The fewest instances cannot exceed the most."
        for key, label in self.errors.items():
            label.show_error(errors.get(key))
        if errors:
            return errors
        plan.image_uri = image
        plan.model_source = model
        plan.role_arn = self.role_arn()
        plan.instance_types = types
        plan.autoscale_min = self.scale_min.value() if self.autoscale.isChecked() else 0
        plan.autoscale_max = self.scale_max.value() if self.autoscale.isChecked() else 1
        plan.accepted_unknown = list(self.preflight.accepted)
        plan.max_lifetime_hours = self.lifetime.value()
        return errors

    def field_for(self, section: str) -> QWidget | None:
        """The field that fixes a preflight check of ``section`` (role, image, …)."""
        key = FIELD_OF_SECTION.get(section)
        return self.fields[key] if key is not None else None

    def show_blocker(self, section: str, text: str) -> None:
        """The failing check's line right under the field that fixes it."""
        key = FIELD_OF_SECTION.get(section)
        if key is not None:
            self.errors[key].show_error(text)


__all__ = ["KindSetup"]
