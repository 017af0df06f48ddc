"""The reply cache: keys, the disk store, and (for fleets of processes and nodes) the Redis store.

`open_store` is the one way to open a cache; the Redis client is imported only when the Redis backend is chosen.
"""

from __future__ import annotations

from judgebias.cache.base import ReplyStore
from judgebias.cache.disk import KEY_VERSION, MODES, ReplyCache, TextOnlyDisk, call_key, sample_key
from judgebias.config.schema import CacheBackend, CacheConfig
from judgebias.core.errors import UserError

BACKENDS = tuple(str(backend) for backend in CacheBackend)  # disk, redis (plain text for argparse's choices)
URL_ENV = CacheConfig.url_env

__all__ = [
    "BACKENDS",
    "KEY_VERSION",
    "MODES",
    "URL_ENV",
    "ReplyCache",
    "ReplyStore",
    "TextOnlyDisk",
    "call_key",
    "open_cache",
    "open_store",
    "sample_key",
]


def open_cache(config: CacheConfig) -> ReplyStore:
    """The run's reply store as configured by `cache.backend`, `cache.dir`, `cache.mode` and `cache.url_env`."""
    return open_store(str(config.backend), config.dir, str(config.mode), config.url_env)


def open_store(backend: str, directory: str, mode: str, url_env: str = URL_ENV) -> ReplyStore:
    """The reply store named by `backend`: the disk cache in `directory`, or Redis (its URL in env var `url_env`).

    The Redis store is reached (PING) and any replies a previous run kept on disk are pushed before this returns,
    so an unreachable Redis stops a run before its first judge call.
    """
    if backend == "disk":
        return ReplyCache(directory, mode)
    if backend == "redis":
        from judgebias.cache.shared import RedisCache

        return RedisCache(url_env, directory, mode)
    raise UserError(f"cache.backend={backend!r} is not a cache backend: use one of {', '.join(BACKENDS)}")
