"""Endpoints the manager does not follow: this installation's orphans (in any region used
before) and other installations' endpoints, which are shown and never touched."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from captioner.cloud.endpoints import EndpointControl, StopReport
from captioner.cloud.errors import translate
from captioner.cloud.hooks import Hook
from captioner.cloud.inventory import Inventory, ManagedEndpoint, take_inventory
from captioner.cloud.state import load_state
from captioner.cloud.status import EndpointSnapshot
from captioner.cloud.tasks import Tasks

RegionControlFactory = Callable[[str], EndpointControl]  # blocking; may raise


class Orphans:
    """The start-up search over regions, the orphans it found and the others' list."""

    def __init__(self, tasks: Tasks, home: Callable[[], Awaitable[EndpointControl]],
                 region_control: RegionControlFactory | None, *, stop_poll_interval: float,
                 failures: tuple[type[BaseException], ...]) -> None:
        self._tasks = tasks
        self._home = home
        self._region_control = region_control
        self._stop_poll_interval = stop_poll_interval
        self._failures = failures
        self._regional: dict[str, EndpointControl] = {}
        self._orphans: list[EndpointSnapshot] = []
        self._regions: dict[str, str] = {}  # orphan name → its region
        self._others: list[ManagedEndpoint] = []
        self.orphans_changed: Hook = Hook()  # (list[EndpointSnapshot])
        self.others_changed: Hook = Hook()  # (list[ManagedEndpoint]): not ours, read-only

    @property
    def orphans(self) -> list[EndpointSnapshot]:
        return list(self._orphans)

    @property
    def others(self) -> list[ManagedEndpoint]:
        return list(self._others)

    def region_of(self, name: str) -> str | None:
        return self._regions.get(name)

    def reset(self) -> None:
        """Credentials or region changed: build the regional controls again."""
        self._regional.clear()

    async def control_in(self, region: str) -> EndpointControl:
        home = await self._home()
        if region in ("", home.region) or self._region_control is None:
            return home
        if region not in self._regional:
            try:
                self._regional[region] = await self._tasks.run(None, self._region_control,
                                                               region)
            except self._failures as exc:
                raise translate(exc) from exc
        return self._regional[region]

    async def search(self, state_path: Path | None) -> Inventory:
        """Search the current region and every region used before (typed errors raise)."""
        home = await self._home()
        state = await self._tasks.run(None, load_state, state_path)
        controls = [await self.control_in(region)
                    for region in dict.fromkeys([home.region, *state.regions_used])]
        return await self._tasks.run(None, take_inventory, list(dict.fromkeys(controls)))

    def found(self, orphans: list[tuple[str, EndpointSnapshot]],
              others: list[ManagedEndpoint]) -> None:
        """Publish what the search left unadopted: (region, snapshot) pairs, and others'."""
        self._orphans = [snap for _, snap in orphans]
        self._regions.update({snap.name: region for region, snap in orphans})
        self._others = others
        self.others_changed.emit(self.others)
        self.orphans_changed.emit(self.orphans)

    async def stop_all(self) -> list[str]:
        """Stop every orphan (in its region); returns the errors (readable), the rest go."""
        errors: list[str] = []
        for snap in list(self._orphans):
            try:
                control = await self.control_in(self._regions.get(snap.name, ""))
                await self._tasks.run(None, control.stop, snap.name,
                                      poll_interval=self._stop_poll_interval)
            except self._failures as exc:
                errors.append(f"{snap.name}: {translate(exc, 'stop')}")
                continue
            self._orphans = [o for o in self._orphans if o.name != snap.name]
        self.orphans_changed.emit(self.orphans)
        return errors

    async def force_stop(self, name: str, typed_name: str) -> StopReport:
        """Delete an endpoint that is not provably ours, once the user typed its name.

        Raises NotOwnedError when ``typed_name`` is not ``name`` (nothing is deleted) and
        the typed errors of the stop itself; the others' list drops it after.
        """
        control = await self._home()
        report = await self._tasks.run(None, control.stop, name, confirm_name=typed_name,
                                       poll_interval=self._stop_poll_interval)
        self._others = [e for e in self._others if e.name != name]
        self.others_changed.emit(self.others)
        return report
