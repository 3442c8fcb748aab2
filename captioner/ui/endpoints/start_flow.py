"""Start → plan and cost → "Start … at about $X/hour?" → deploy; shared by page and tray.

The confirmation is opened with ``open()`` (never ``exec()``: a nested event loop
would break the running asyncio task); Cancel is its default button, so Enter
alone never spends money.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from captioner.cloud.deploy_plan import Kind, lifetime_text
from captioner.cloud.manager import EndpointManager, PreparedDeploy
from captioner.cloud.preflight import Preflight
from captioner.settings import Settings
from captioner.ui.endpoints.runner import Runner
from captioner.ui.endpoints.service import SetupService, crashed, gate
from captioner.ui.endpoints.status_row import KIND_NOUNS

log = logging.getLogger(__name__)


class DeployConfirmation(QMessageBox):
    """"Deploy … at about $X/hour?" — opened with ``open()``; Deploy = accepted."""

    def __init__(self, prepared: PreparedDeploy, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        plan = prepared.plan
        noun = KIND_NOUNS[prepared.kind]
        self.setWindowTitle(f"Start the {noun}?")
        self.setIcon(QMessageBox.Icon.Question)
        self.setText(f"Start the {noun} {plan.name} in {plan.region}?\n\n"
                     f"Estimated cost: {prepared.cost_text()}.")
        self.setInformativeText(
            f"Instances: {' → '.join(plan.instance_types)}. It bills every hour until it is "
            "stopped; the first start takes many minutes. Prices are approximate — the AWS "
            f"pricing page is the truth.\n\nMaximum lifetime: {lifetime_text(plan)}.")
        self.deploy_button = self.addButton("&Deploy", QMessageBox.ButtonRole.AcceptRole)
        self.cancel_button = self.addButton(QMessageBox.StandardButton.Cancel)
        self.deploy_button.setAccessibleName(f"Deploy the {noun}")
        self.cancel_button.setAccessibleName("Cancel: create nothing")
        self.setDefaultButton(self.cancel_button)  # Enter must not spend money by accident
        self.setEscapeButton(self.cancel_button)
        self.setAccessibleName(f"Confirm starting the {noun}")
        self.setAccessibleDescription(self.text())
        self.setWindowModality(Qt.WindowModality.WindowModal)


class StartFlow:
    """Start button → prepare (plan + cost) → confirmation → ``manager.start``.

    Shared by the page and the tray; ``dialog`` is the open confirmation (tests use it).
    """

    def __init__(self, manager: EndpointManager, parent: QWidget | None = None) -> None:
        self.manager = manager
        self.parent = parent
        self.dialog: DeployConfirmation | None = None

    def request(self, kind: Kind, checked: Preflight | None = None) -> None:
        """``checked``: the preflight just run and shown, so it is not run twice."""
        self.manager.spawn(self._prepare_and_ask(kind, checked))

    async def _prepare_and_ask(self, kind: Kind, checked: Preflight | None) -> None:
        prepared = await self.manager.prepare(kind, checked)
        if prepared is None:
            return  # the error is in the kind's status
        dialog = DeployConfirmation(prepared, self.parent)
        dialog.accepted.connect(lambda: self.manager.spawn(self.manager.start(kind, prepared)))
        dialog.rejected.connect(lambda: self.manager.cancel_prepared(kind))
        dialog.finished.connect(dialog.deleteLater)
        self.dialog = dialog
        dialog.open()




class GuardedStart:
    """Preflight, then the cost confirmation — or, when a check blocks, the set-up.

    ``on_checks(kind, preflight, blocked)`` sees every preflight report (the page shows
    the list; the tray opens the set-up when ``blocked``). Used by the page's Start
    and by the tray's one-click Start, so both refuse the same way.
    """

    def __init__(self, flow: StartFlow, runner: Runner, service: SetupService,
                 settings: Callable[[], Settings],
                 on_checks: Callable[[Kind, Preflight, bool], None]) -> None:
        self.flow = flow
        self.runner = runner
        self.service = service
        self.settings = settings
        self.on_checks = on_checks

    def request(self, kind: Kind) -> None:
        self.runner.spawn(self._go(kind))

    async def check(self, kind: Kind) -> Preflight:
        """The preflight of the saved plan (never raises: a crash is a FAIL line)."""
        try:
            return await self.runner.run(self.service.preflight,
                                         copy.deepcopy(self.settings()), kind)
        except Exception as exc:  # a bug in a check must still be seen, not swallowed
            log.exception("! preflight of %s failed", kind)
            return crashed(kind, self.settings().aws.region, str(exc))

    async def _go(self, kind: Kind) -> None:
        preflight = await self.check(kind)
        accepted = getattr(self.settings().cloud, kind).accepted_unknown
        blocked = gate(preflight, accepted) is not None
        self.on_checks(kind, preflight, blocked)
        if not blocked:
            self.flow.request(kind, preflight)


__all__ = ["DeployConfirmation", "GuardedStart", "StartFlow"]
