"""Skipping Hydra's mode probe: only when nothing could set hydra.mode."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra

from judgebias.cli.composition import may_set_mode
from judgebias.cli.rundir import register_resolver
from judgebias.cli.schemas import register_schemas


@pytest.mark.parametrize(
    "override",
    ["hydra.mode=MULTIRUN", "+hydra.mode=RUN", "++hydra.mode=MULTIRUN", "~hydra.mode", "hydra.searchpath=[file://x]"],
)
def test_an_override_naming_the_mode_or_the_search_path_keeps_the_probe(override: str) -> None:
    """An override that sets hydra.mode, or adds configs that might, makes Hydra compose twice as before."""
    assert may_set_mode(["judge=always_a", override]) is True


def test_ordinary_overrides_skip_the_probe() -> None:
    """Group choices, keys and the run folder cannot set the mode: the probe is skipped."""
    overrides = ["judge=local", "data.limit=3", "hydra.run.dir=out", "hydra/launcher=joblib", "max_concurrency=4"]
    assert may_set_mode(overrides) is False


def test_the_packaged_config_sets_no_mode_and_no_search_path() -> None:
    """The premise of the skip: judgebias's own configs leave hydra.mode and hydra.searchpath unset."""
    register_schemas()
    register_resolver()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module="judgebias.conf", version_base="1.3"):
            cfg = compose(config_name="config", overrides=["hydra.run.dir=unused"], return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()
    assert (None, []) == (cfg.hydra.mode, list(cfg.hydra.searchpath))
