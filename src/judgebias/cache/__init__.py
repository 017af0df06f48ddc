"""The reply cache: keys, the disk store, and (for fleets of processes) the Redis store."""

from judgebias.cache.disk import KEY_VERSION, MODES, ReplyCache, TextOnlyDisk, call_key

__all__ = ["KEY_VERSION", "MODES", "ReplyCache", "TextOnlyDisk", "call_key"]
