"""The captions image in the user's AWS account: build it there, follow it, remove it.

Build: what it creates and costs is shown first (:class:`BuildDialog`); only then
are the build files uploaded and CodeBuild started, and the build is followed (also
one found running when the page opens: it goes on in AWS if Captioner closes).
Remove: what exists by the build's names is listed with its monthly cost and removed
only when the user says so (Cancel is the default), never while a Captioner captions
endpoint in the region might need the image for a new instance. Both report on the
captions set-up's build line; AWS calls run in the runner, never in a Qt slot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace

from PySide6.QtWidgets import QWidget

from captioner.cloud.image_build import PROJECT, BuildPlan
from captioner.cloud.image_removal import Leftovers
from captioner.cloud.manager import EndpointManager
from captioner.settings import AwsSettings
from captioner.ui.confirm import ask
from captioner.ui.endpoints.build_dialog import BuildDialog
from captioner.ui.endpoints.kind_setup import KindSetup
from captioner.ui.endpoints.runner import Runner
from captioner.ui.endpoints.service import SetupService
from captioner.ui.endpoints.status_row import hms
from captioner.ui.settings_store import SettingsStore

log = logging.getLogger(__name__)

BUILD_POLL_SECONDS = 15.0  # how often a running image build is looked at


class CaptionsImageFlow:
    """Build and removal of the captions image for the Endpoints page.

    ``saved`` saves the page (after the Image field changed); ``changed`` lists the
    account's images and roles again (after an image came or went).
    """

    def __init__(self, parent: QWidget, setup: KindSetup, store: SettingsStore,
                 manager: EndpointManager, service: SetupService, runner: Runner, *,
                 saved: Callable[[], object], changed: Callable[[], None]) -> None:
        self.parent, self.setup, self.store = parent, setup, store
        self.manager, self.service, self.runner = manager, service, runner
        self._saved, self._changed = saved, changed
        self.dialog: BuildDialog | None = None
        self.following: str | None = None  # the build being followed

    def _aws(self) -> AwsSettings:
        """The account settings as they are now, detached from later edits."""
        return replace(self.store.settings.aws)

    # ---- build ---------------------------------------------------------------------------

    def build(self) -> None:
        """Show what an image build creates and costs; build only if the user says so."""
        self.setup.set_build_status("Reading the account…", busy=True)
        self.runner.call(self.service.plan_image_build, self._aws(),
                         done=self._ask_build, failed=self._build_failed)

    def rejoin(self, aws: AwsSettings) -> None:
        """Follow a build started before (by this app or an earlier run), if one runs."""
        if self.following is None:
            self.runner.call(self.service.running_image_build, aws, done=self._rejoin,
                             failed=lambda m: log.info("! no look at running builds: %s", m))

    def _rejoin(self, found: tuple[BuildPlan, str] | None) -> None:
        if found is not None and self.following is None:
            self.runner.spawn(self._follow(self._aws(), *found))

    def _ask_build(self, plan: BuildPlan) -> None:
        self.setup.set_build_status("")
        dialog = BuildDialog(plan, self.parent)
        dialog.accepted.connect(lambda: self._start_build(plan))
        dialog.finished.connect(dialog.deleteLater)
        self.dialog = dialog
        dialog.open()

    def _start_build(self, plan: BuildPlan) -> None:
        aws = self._aws()
        self.setup.set_build_status("Uploading the build files and starting the build…",
                                    busy=True)
        self.runner.call(self.service.start_image_build, aws, plan,
                         done=lambda build_id: self.runner.spawn(
                             self._follow(aws, plan, build_id)),
                         failed=self._build_failed)

    async def _follow(self, aws: AwsSettings, plan: BuildPlan, build_id: str) -> None:
        self.following = build_id
        try:
            await self._watch(aws, plan, build_id)
        finally:
            self.following = None

    async def _watch(self, aws: AwsSettings, plan: BuildPlan, build_id: str) -> None:
        setup = self.setup
        while True:
            progress, problem = await self.runner.outcome(self.service.image_build_progress,
                                                          aws, build_id)
            if progress is None:
                setup.set_build_status(
                    f"Could not read the build's progress: {problem} It goes on in AWS "
                    f"(CodeBuild project {PROJECT}); press Refresh lists later.",
                    failed=True)
                return
            if progress.running:
                setup.set_build_status(
                    f"Building in AWS CodeBuild — {progress.phase.replace('_', ' ').lower()}"
                    f", {hms(progress.seconds)} (usually 20–30 min). It goes on if you close "
                    "Captioner.", busy=True)
                await asyncio.sleep(BUILD_POLL_SECONDS)
                continue
            if progress.succeeded:
                setup.image.setCurrentText(plan.image_uri)
                setup.set_build_status(f"✔ Built and pushed {plan.image_uri} in "
                                       f"{hms(progress.seconds)}; it is now the image.")
                self._saved()
                self._changed()
            else:
                setup.set_build_status(
                    f"The image build ended {progress.status.lower().replace('_', ' ')}: "
                    f"{progress.failure or 'no reason given'}. Its log is in CloudWatch "
                    f"(CodeBuild project {PROJECT}).", failed=True)
            return

    def _build_failed(self, message: str) -> None:
        self.setup.set_build_status(f"Could not build the image: {message}", failed=True)

    # ---- removal -------------------------------------------------------------------------

    def remove(self) -> None:
        """List what of the captions image exists; remove it only if the user says so."""
        setup, aws = self.setup, self._aws()
        if serving := self._captions_endpoints(aws.region):
            setup.set_build_status(f"Stop {serving[0]} first: a new instance of a captions "
                                   "endpoint would need the image.", failed=True)
            return
        setup.set_build_status("Looking for the image and what built it…", busy=True)
        self.runner.call(self.service.image_leftovers, aws,
                         done=lambda found: self.runner.spawn(self._remove(aws, found)),
                         failed=lambda m: setup.set_build_status(
                             f"Could not look for the image: {m}", failed=True))

    def _captions_endpoints(self, region: str) -> list[str]:
        """Captioner's captions endpoints in ``region`` (this app's, an orphan of ours, a
        colleague's) that a removed image would leave unable to add an instance."""
        m, own = self.manager, self.manager.status("stt")
        names = [own.name or "the captions endpoint"] if not own.can_start else []
        names += [o.name for o in m.others if o.kind == "stt" and o.region in ("", region)]
        names += [o.name for o in m.orphans
                  if o.kind == "stt" and m.orphan_region(o.name) in (None, region)]
        return names

    async def _remove(self, aws: AwsSettings, found: Leftovers) -> None:
        setup = self.setup
        if found.empty:
            setup.set_build_status(f"Nothing of the captions image is left in {aws.region}.")
            return
        setup.set_build_status("")
        items = "\n".join(f"• {line}" for line in found.lines())
        answer = await ask(
            self.parent, "Remove the captions image from AWS?",
            f"Remove from account {found.plan.account} ({aws.region}):\n\n{items}\n\n"
            "Cloud captions need the image: building it again takes 20–30 minutes (about "
            "$0.30). Endpoints, their roles and the spoken-replies image are not touched.",
            [("remove", "&Remove"), ("cancel", "Cancel")], default="cancel")
        if answer != "remove":
            return
        setup.set_build_status("Removing…", busy=True)
        removed, problem = await self.runner.outcome(self.service.remove_image_leftovers,
                                                     aws, found)
        if removed is None:
            setup.set_build_status(f"Could not remove it all: {problem}", failed=True)
        else:
            if found.plan.image_uri in (setup.image.currentText().strip(),
                                        self.store.settings.cloud.stt.image_uri):
                setup.image.setCurrentText("")  # gone: the checks would only fail on it
                self._saved()
            setup.set_build_status("✔ Removed " + ", ".join(removed) + ". None of it bills "
                                   "any more.")
        self._changed()
