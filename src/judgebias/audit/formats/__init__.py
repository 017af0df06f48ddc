"""The judgment-file formats the audit reads, one module per tool behind this registry: a new format is one module
with a FORMAT and one line here."""

from __future__ import annotations

from judgebias.audit.formats import alpacaeval, arenahard, fastchat
from judgebias.audit.formats.common import Format

FORMATS: dict[str, Format] = {module.FORMAT.name: module.FORMAT for module in (fastchat, arenahard, alpacaeval)}
