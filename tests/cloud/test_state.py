"""cloud-state.json: the installation id is made once and kept; regions are remembered."""

from __future__ import annotations

from pathlib import Path

from captioner.cloud.endpoints import cloud_configured
from captioner.cloud.state import load_state, remember_region
from captioner.settings import Settings


def test_installation_id_is_made_once_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "cloud-state.json"
    first = load_state(path)
    assert len(first.installation_id) == 16 and path.exists()
    assert load_state(path).installation_id == first.installation_id
    assert load_state(tmp_path / "other.json").installation_id != first.installation_id


def test_regions_are_remembered_once_each(tmp_path: Path) -> None:
    path = tmp_path / "cloud-state.json"
    installation = load_state(path).installation_id
    remember_region("us-west-2", path)
    remember_region("eu-west-1", path)
    remember_region("us-west-2", path)
    state = load_state(path)
    assert state.regions_used == ["us-west-2", "eu-west-1"]
    assert state.installation_id == installation


def test_an_unreadable_file_gets_a_new_id_instead_of_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "cloud-state.json"
    path.write_text("{not json", encoding="utf-8")
    state = load_state(path)
    assert state.installation_id and state.regions_used == []
    assert load_state(path).installation_id == state.installation_id  # and it is kept


def test_start_up_looks_for_endpoints_once_this_installation_deployed_one(tmp_path: Path
                                                                        ) -> None:
    """An endpoint deployed from the command line with the default credentials names
    nothing in the settings: the app must still look for it at start, or it would bill
    unseen (no quit question, no idle stop)."""
    path = tmp_path / "cloud-state.json"
    fresh = Settings()
    assert not cloud_configured(fresh, path)  # nothing to look for: no AWS calls at start
    load_state(path)  # an id, but no endpoint ever made
    assert not cloud_configured(fresh, path)
    remember_region("eu-west-1", path)  # what a deploy does first
    assert cloud_configured(fresh, path)
    path.write_text("[]", encoding="utf-8")  # damaged: no crash
    assert not cloud_configured(fresh, path)
