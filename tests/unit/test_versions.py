"""Package versions for provenance.json: the same answers as importlib.metadata, without its start-up cost."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest

from judgebias.engine.outputs import PACKAGES
from judgebias.io.versions import installed_versions


def metadata_version(name: str) -> str | None:
    """What importlib.metadata says (None: not installed)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_the_recorded_packages_match_importlib_metadata() -> None:
    """provenance.json records the versions importlib.metadata reports, None for a package not installed."""
    names = [*PACKAGES, "hydra_core", "PyYAML", "no-such-package-here"]
    found = installed_versions(names)
    assert list(found) == names
    assert found == {name: metadata_version(name) for name in names}
    assert found["hydra-core"] is not None and found["no-such-package-here"] is None


def write_dist_info(folder: Path, name: str, version: str) -> None:
    """An installed distribution's dist-info folder, as pip leaves it."""
    dist = folder / f"{name}-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nVersion: 9.9.9 in the description\n",
        encoding="utf-8",
    )


def test_the_first_folder_on_sys_path_wins_and_names_are_compared_normalized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two installs of one package: the one earlier on sys.path is reported, whatever the spelling asked for."""
    write_dist_info(tmp_path / "first", "Shadow_Pkg", "1.2.3")
    write_dist_info(tmp_path / "second", "shadow_pkg", "4.5.6")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "first"), str(tmp_path / "second"), *sys.path])
    found = installed_versions(["shadow-pkg", "Shadow.Pkg"])
    assert found == {"shadow-pkg": "1.2.3", "Shadow.Pkg": "1.2.3"}
    assert metadata_version("shadow-pkg") == "1.2.3"


def test_a_dist_info_without_a_version_is_asked_of_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A METADATA file without a Version header is left to importlib.metadata to answer."""
    broken = tmp_path / "site" / "odd_pkg-0.1.dist-info"
    broken.mkdir(parents=True)
    (broken / "METADATA").write_text("Metadata-Version: 2.1\nName: odd_pkg\n\n", encoding="utf-8")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site"), *sys.path])
    assert installed_versions(["odd-pkg"]) == {"odd-pkg": metadata_version("odd-pkg")}
