"""The typed schema registered with Hydra, so conf/config.yaml can extend it (kept out of the user-facing groups)."""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from judgebias.config.schema import Config


def register_schemas() -> None:
    """Register the run's schema as `config_schema`; the schema module itself knows nothing of Hydra."""
    ConfigStore.instance().store(name="config_schema", node=Config)
