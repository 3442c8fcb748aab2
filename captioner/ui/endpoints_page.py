"""Settings → Endpoints: set up, check, start, watch and stop the SageMaker endpoints.

Three steps a newcomer with only an AWS account can follow: (1) the AWS account —
credentials and region, checked live; (2) per kind (captions, replies) what to
deploy — image, model, execution role (chosen or created after its policies are
shown), instance pool with prices, autoscaling — and the preflight list that must
pass before Start; (3) cost safety — the idle stop (the maximum lifetime, enforced by
AWS itself, is set per kind). Everything
is saved in the one settings object; secrets go to the OS keyring. AWS calls run in
the runner's executor and the manager's tasks, never in a GUI slot; dialogs open
with ``open()``.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from captioner.aws import KeyringCredentials
from captioner.cloud.account import CallerIdentity, RoleInfo
from captioner.cloud.deploy_plan import KINDS, Kind
from captioner.cloud.images import ImageCandidate
from captioner.cloud.manager import EndpointManager, KindStatus
from captioner.cloud.preflight import Check, Preflight
from captioner.cloud.preflight.checks import instances_needed
from captioner.cloud.status import EndpointSnapshot
from captioner.settings import AwsSettings, Settings
from captioner.ui.a11y import announce, show_text
from captioner.ui.confirm import ask
from captioner.ui.endpoints.account_box import AccountBox
from captioner.ui.endpoints.aws_setup import AccountSetupService
from captioner.ui.endpoints.image_flow import CaptionsImageFlow
from captioner.ui.endpoints.kind_setup import KindSetup
from captioner.ui.endpoints.page_parts import (
    NOTE_BACKGROUND,
    NOTE_TEXT,
    WheelGuard,
    banner,
    checked_part,
)
from captioner.ui.endpoints.preflight_list import line_of
from captioner.ui.endpoints.role_dialog import RoleDialog
from captioner.ui.endpoints.runner import Runner
from captioner.ui.endpoints.service import RoleProposal, SetupService
from captioner.ui.endpoints.start_flow import DeployConfirmation, GuardedStart, StartFlow
from captioner.ui.endpoints.status_row import KIND_NOUNS, KIND_TITLES, EndpointRow, hms
from captioner.ui.settings.common import Errors, Page
from captioner.ui.settings.recognition_page import KeyStore
from captioner.ui.settings_store import SettingsStore

log = logging.getLogger(__name__)

REFRESH_MS = 1000
PREFERRED_SIZE = QSize(900, 760)  # the set-up reads best without side-scrolling
# digits as mnemonics: Alt+1 / Alt+2 switch kinds without taking letters the buttons use
TAB_TITLES: dict[Kind, str] = {"stt": "&1 Captions (speech-to-text)",
                               "tts": "&2 Replies (speech)"}


class EndpointsPage(Page):
    """The Endpoints tab: ``EndpointsPage(manager, store)``; see the module docstring."""

    title = "Endpoints"

    def __init__(self, manager: EndpointManager, store: SettingsStore,
                 service: SetupService | None = None, *, keys: KeyStore | None = None,
                 runner: Runner | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Endpoints")
        self.manager, self.store = manager, store
        self.service = service or AccountSetupService()
        self.runner = runner or Runner()
        self.flow = StartFlow(manager, self)
        self.gate = GuardedStart(self.flow, self.runner, self.service, lambda: store.settings,
                                 self._on_checks)
        self.role_dialog: RoleDialog | None = None

        intro = QLabel("Run captions and spoken replies on your own Amazon SageMaker "
                       "endpoints. You need an AWS account; the steps below check "
                       "everything before anything is created. Endpoints bill every hour "
                       "while they run. Captions and replies use an endpoint as soon as it "
                       "serves, and go back to the settings when it stops.")
        intro.setWordWrap(True)
        self.idle_label = QLabel()
        self.idle_label.setWordWrap(True)
        self.idle_label.setAccessibleName("Idle auto-stop warning")
        self.keep_button = QPushButton("&Keep running")
        self.keep_button.setAccessibleName("Keep the endpoint running: cancel the idle stop")
        self.idle_box = banner(self.idle_label, self.keep_button)
        self._idle_kind: Kind | None = None
        self.orphans_label = QLabel()
        self.orphans_label.setWordWrap(True)
        self.orphans_label.setAccessibleName("Other running endpoints")
        self.orphans_button = QPushButton("Stop ot&hers")
        self.orphans_button.setAccessibleName("Stop the other running endpoints")
        self.orphans_box = banner(self.orphans_label, self.orphans_button)

        self.others_label = QLabel()
        self.others_label.setWordWrap(True)
        self.others_label.setAccessibleName("Other people's endpoints")
        self.others_label.setStyleSheet(f"background: {NOTE_BACKGROUND}; color: {NOTE_TEXT};"
                                        " padding: 6px;")
        self.others_label.hide()

        self.account = AccountBox(self.service, self.runner, keys or KeyringCredentials(),
                                  self.commit)
        self.setups: dict[Kind, KindSetup] = {k: KindSetup(k) for k in KINDS}
        self.rows: dict[Kind, EndpointRow] = {k: s.row for k, s in self.setups.items()}
        self.image_flow = CaptionsImageFlow(self, self.setups["stt"], store, manager,
                                            self.service, self.runner, saved=self.commit,
                                            changed=self.refresh_lists)
        self.kind_tabs = QTabWidget()
        self.kind_tabs.setAccessibleName("Endpoint kinds")
        for kind, setup in self.setups.items():
            self.kind_tabs.addTab(setup, TAB_TITLES[kind])
        steps = QGroupBox("2. What to run")
        steps.setAccessibleName("What to run")
        QVBoxLayout(steps).addWidget(self.kind_tabs)

        safety = QGroupBox("3. Cost safety (both endpoints)")
        safety.setAccessibleName("Cost safety")
        safety_form = QFormLayout(safety)
        self.idle_minutes = QSpinBox()
        self.idle_minutes.setRange(5, 24 * 60)
        self.idle_minutes.setSuffix(" min")
        self.idle_minutes.setAccessibleName("Stop an idle endpoint after (minutes)")
        label = QLabel("Stop &when idle for:")
        label.setBuddy(self.idle_minutes)
        safety_form.addRow(label, self.idle_minutes)
        note = QLabel("Captioner stops an endpoint nobody used for this long (after a "
                      "one-minute warning) while it runs; the maximum lifetime of each "
                      "endpoint, above, holds even when this computer sleeps or is off.")
        note.setWordWrap(True)
        safety_form.addRow(note)

        content = QWidget()
        layout = QVBoxLayout(content)
        for widget in (intro, self.idle_box, self.orphans_box, self.others_label, self.account,
                       steps, safety):
            layout.addWidget(widget)
        layout.addStretch(1)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        # long lines wrap instead of widening the page (no side-scrolling at large text)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(content)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.scroll)
        self.wheel_guard = WheelGuard(self.scroll, self)
        for box in [*content.findChildren(QAbstractSpinBox), *content.findChildren(QComboBox)]:
            box.installEventFilter(self.wheel_guard)

        for kind, setup in self.setups.items():
            setup.row.start_button.clicked.connect(lambda _=False, k=kind: self.start(k))
            setup.row.stop_button.clicked.connect(lambda _=False, k=kind: self.stop(k))
            setup.check_requested.connect(lambda k=kind: self.check(k))
            setup.create_role_requested.connect(lambda k=kind: self.create_role(k))
            setup.build_image_requested.connect(self.image_flow.build)
            setup.remove_image_requested.connect(self.image_flow.remove)
            setup.preflight.quota_requested.connect(lambda k=kind: self.ask_quota(k))
            setup.preflight.move_first_requested.connect(
                lambda itype, k=kind: self.move_first(k, itype))
            setup.refresh_requested.connect(self.refresh_lists)
            setup.preflight.accepted_changed.connect(lambda: self.commit())
            setup.edited.connect(setup.preflight.mark_stale)
        self.account.checked.connect(self._on_account)
        self.keep_button.clicked.connect(self._keep_running)
        self.orphans_button.clicked.connect(self._stop_orphans)

        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        hooks = ((manager.status_changed, self._on_status),
                 (manager.idle_warning, self._on_idle),
                 (manager.orphans_changed, self._on_orphans),
                 (manager.others_changed, self._on_others))
        for hook, callback in hooks:
            hook.connect(callback)
        self.destroyed.connect(lambda *_: [h.disconnect(c) for h, c in hooks])
        self.refresh()
        self._on_orphans(manager.orphans)
        self._on_others(manager.others)
        self._on_idle(None, None)

    def sizeHint(self) -> QSize:
        return PREFERRED_SIZE

    # ---- saving --------------------------------------------------------------------------

    def commit(self) -> str | None:
        """Validate the page into the store (saved at once); returns the first error.

        Typed keys go to the keyring first: if it refuses, nothing is saved. A change to
        what is checked (not merely which checks the user went past) makes the shown
        preflight results stale, and they say so.
        """
        new = self.store.copy()
        errors = self.write(new) or self.commit_secrets()
        if errors:
            return next(iter(errors.values()))
        before = checked_part(self.store.settings)
        self.store.replace(new)
        if checked_part(new) != before:
            for setup in self.setups.values():
                setup.preflight.mark_stale()
        return None

    # ---- actions -------------------------------------------------------------------------

    @property
    def confirmation(self) -> DeployConfirmation | None:
        return self.flow.dialog

    def start(self, kind: Kind) -> None:
        """Save, run the preflight (shown), and only when it passes ask about the cost."""
        row, setup = self.rows[kind], self.setups[kind]
        if (error := self.commit()) is not None:
            setup.preflight.set_running(f"Fix the set-up first: {error}")
            return
        if self.focusWidget() is row.start_button:  # keep the focus (and view) by the checks
            setup.check_button.setFocus()
        row.start_button.setEnabled(False)
        setup.preflight.set_running("Checking before starting…")
        self.gate.request(kind)

    def check(self, kind: Kind) -> None:
        setup = self.setups[kind]
        if (error := self.commit()) is not None:
            setup.preflight.set_running(f"Fix the set-up first: {error}")
            return
        setup.check_button.setEnabled(False)
        setup.preflight.set_running("Checking…")
        self.runner.spawn(self._check(kind))

    async def _check(self, kind: Kind) -> None:
        preflight = await self.gate.check(kind)
        self.setups[kind].check_button.setEnabled(True)
        self._on_checks(kind, preflight, False)

    def _on_checks(self, kind: Kind, preflight: Preflight, blocked: bool) -> None:
        setup = self.setups[kind]
        setup.check_button.setEnabled(True)
        setup.preflight.set_preflight(preflight)
        if blocked:
            self.show_check(kind, setup.preflight.blocking())
        self.refresh()

    def show_check(self, kind: Kind, check: Check | None) -> None:
        """Bring ``kind``'s set-up into view with the field that fixes ``check`` focused."""
        self.kind_tabs.setCurrentWidget(self.setups[kind])
        if check is None:
            return
        section = check.id.section
        target = (self.account.profile if self.account.use_profile.isChecked()
                  else self.account.key_id) if section == "credentials" else (
            self.setups[kind].field_for(section) or self.setups[kind].preflight)
        if section == "credentials":
            self.account.error.show_error(line_of(check))
        else:
            self.setups[kind].show_blocker(section, line_of(check))
        label = self.setups[kind].preflight.labels.get(check.id.value)
        if label is not None:
            self.scroll.ensureWidgetVisible(label)
        self.scroll.ensureWidgetVisible(target)  # the field wins when both do not fit
        target.setFocus()

    def show_preflight(self, kind: Kind, preflight: Preflight) -> None:
        """The tray's Start was refused: show its preflight here, at the first blocker."""
        self._on_checks(kind, preflight, True)

    def stop(self, kind: Kind) -> None:
        self.rows[kind].stop_button.setEnabled(False)
        self.manager.spawn(self.manager.stop(kind))

    def _keep_running(self) -> None:
        if self._idle_kind is not None:
            self.manager.cancel_idle_stop(self._idle_kind)

    def _stop_orphans(self) -> None:
        self.orphans_button.setEnabled(False)
        self.manager.spawn(self.manager.stop_orphans())

    # ---- lists and the role --------------------------------------------------------------

    def _on_account(self, identity: CallerIdentity | None) -> None:
        if identity is not None:
            self.refresh_lists()

    def refresh_lists(self) -> None:
        aws = self.store.settings.aws
        identity = self.account.identity
        account = identity.account if identity else "ACCOUNT_ID"
        for setup in self.setups.values():
            setup.role_note.setText("Looking for roles that trust SageMaker…")
        self.runner.call(self.service.sagemaker_roles, replace(aws), done=self._got_roles,
                         failed=self._list_failed("role"))
        self.runner.call(self.service.images, replace(aws),
                         done=lambda images: self._got_images(images, aws, account),
                         failed=self._list_failed("image"))

    def _got_roles(self, roles: list[RoleInfo]) -> None:
        for setup in self.setups.values():
            setup.set_roles(roles)

    def _got_images(self, images: list[ImageCandidate], aws: AwsSettings, account: str
                    ) -> None:
        for setup in self.setups.values():
            setup.set_images(images, aws.region, account, aws.profile)
        if not images:  # a build started before may still run
            self.image_flow.rejoin(replace(aws))

    def _list_failed(self, key: str):
        def failed(message: str) -> None:
            for setup in self.setups.values():
                setup.errors[key].show_error(f"Could not list them: {message}")
        return failed

    def create_role(self, kind: Kind) -> None:
        """Show the exact policies of a new role; create it only if the user says so."""
        setup = self.setups[kind]
        if (error := self.commit()) is not None:
            setup.errors["role"].show_error(error)
            return
        setup.errors["role"].show_error(None)
        self.runner.call(self.service.propose_role, self.store.copy(), kind,
                         done=lambda p: self._ask_role(kind, p),
                         failed=setup.errors["role"].show_error)

    def _ask_role(self, kind: Kind, proposal: RoleProposal) -> None:
        dialog = RoleDialog(proposal, KIND_NOUNS[kind], self)
        dialog.accepted.connect(lambda: self._create_role(kind, proposal))
        dialog.finished.connect(dialog.deleteLater)
        self.role_dialog = dialog
        dialog.open()

    def _create_role(self, kind: Kind, proposal: RoleProposal) -> None:
        setup = self.setups[kind]
        setup.role_note.setText(f"Creating the role {proposal.name}…")
        self.runner.call(self.service.create_role, replace(self.store.settings.aws), proposal,
                         done=lambda role: self._role_created(kind, role),
                         failed=setup.errors["role"].show_error)

    def _role_created(self, kind: Kind, role: RoleInfo) -> None:
        setup = self.setups[kind]
        setup.role.addItem(role.arn)
        setup.role.setCurrentText(role.arn)
        setup.role_note.setText(f"✔ Created {role.name}; it is now the execution role.")
        self.commit()

    # ---- quota ---------------------------------------------------------------------------

    def move_first(self, kind: Kind, itype: str) -> None:
        """Put a pool type that has quota first, save, and check again."""
        self.setups[kind].pool.move_to_front(itype)
        self.check(kind)  # saves first

    def ask_quota(self, kind: Kind) -> None:
        self.runner.spawn(self._ask_quota(kind))

    async def _ask_quota(self, kind: Kind) -> None:
        """Ask AWS for enough quota of the pool's first type, once the user agrees; then
        check again (the quota line then says the request is open)."""
        settings = self.store.copy()
        plan = getattr(settings.cloud, kind)
        first = plan.instance_types[0] if plan.instance_types else "?"
        needed = instances_needed(plan)
        answer = await ask(
            self, "Ask AWS for more quota?",
            f"Ask AWS to raise the quota “{first} for endpoint usage” in "
            f"{settings.aws.region} to {needed}? It is a request in Service Quotas: free, "
            "and AWS answers by email, often within a day. Nothing bills until an endpoint "
            "runs.", [("ask", "&Ask AWS"), ("cancel", "Cancel")], default="cancel")
        if answer != "ask":
            return
        setup = self.setups[kind]
        setup.preflight.set_running("Asking AWS for more quota…")
        request, problem = await self.runner.outcome(self.service.request_quota_increase,
                                                     settings, kind)
        if request is None:
            setup.preflight.set_running(f"Could not ask for more quota: {problem}")
            return
        log.info("= quota request for %s: %s", first, request.status)
        self.check(kind)

    # ---- display -------------------------------------------------------------------------

    def refresh(self) -> None:
        for kind, row in self.rows.items():
            m = self.manager
            row.show_status(m.status(kind), m.uptime(kind), m.cost_so_far(kind),
                            m.hourly_cost(kind))

    def _on_status(self, status: KindStatus) -> None:
        self.refresh()

    def _on_idle(self, kind: Kind | None, seconds_left: float | None) -> None:
        self._idle_kind = kind if seconds_left is not None else None
        if kind is None or seconds_left is None:
            self.idle_box.hide()
            return
        show_text(self.idle_label, f"No activity: the {KIND_NOUNS[kind]} stops in "
                                   f"{round(seconds_left)} s to save cost.")
        if self.idle_box.isHidden():
            self.idle_box.show()
            if self.isVisible():  # (the tray tells those elsewhere)
                announce(self.idle_label, self.idle_label.text())

    def _on_orphans(self, orphans: list[EndpointSnapshot]) -> None:
        self.orphans_button.setEnabled(True)
        if not orphans:
            self.orphans_box.hide()
            return
        names = ", ".join(o.name for o in orphans)
        show_text(self.orphans_label, f"Also running (and billing): {names}.")
        self.orphans_box.show()

    def _on_others(self, others: list) -> None:
        """Captioner endpoints of other installations: shown, never adopted or stopped."""
        names = ", ".join(f"{o.name} ({o.status}, {o.ownership.value})" for o in others)
        show_text(self.others_label, "Also in this account, started by other people's "
                  f"Captioner (this app leaves them alone): {names}." if others else "")
        self.others_label.setVisible(bool(others))

    # ---- Page protocol -------------------------------------------------------------------

    def load(self, settings: Settings) -> None:
        self.account.load(settings.aws)
        region = settings.aws.region
        for kind, setup in self.setups.items():
            setup.load(getattr(settings.cloud, kind), region,
                       self.service.instance_types(kind, region),
                       lambda t, r=region: self.service.hourly_price(t, r))
        self.idle_minutes.setValue(settings.cloud.idle_stop_minutes)
        self.refresh()

    def write(self, out: Settings) -> Errors:
        errors: Errors = {}
        if (error := self.account.write(out.aws)) is not None:
            errors["aws"] = error
        for kind, setup in self.setups.items():
            errors.update({f"{kind}.{k}": e
                           for k, e in setup.write(getattr(out.cloud, kind)).items()})
        out.cloud.idle_stop_minutes = self.idle_minutes.value()
        return errors

    def commit_secrets(self) -> Errors:
        error = self.account.commit_secrets()
        return {} if error is None else {"aws": error}

    def show_errors(self, errors: Errors) -> None:
        """Errors are shown by the boxes themselves as ``write`` finds them."""


__all__ = ["KIND_NOUNS", "KIND_TITLES", "DeployConfirmation", "EndpointRow", "EndpointsPage",
           "StartFlow", "hms"]
