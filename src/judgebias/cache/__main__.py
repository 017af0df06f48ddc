"""`python -m judgebias.cache export|import|stats|verify`: move replies between caches as bundles, count them, and
check a disk cache for damage.

    python -m judgebias.cache export FILE [--run RUN_DIR] [--backend disk|redis] [--cache-dir DIR] [--url-env VAR]
    python -m judgebias.cache import FILE [--backend disk|redis] [--cache-dir DIR] [--url-env VAR]
    python -m judgebias.cache stats [--backend disk|redis] [--cache-dir DIR] [--url-env VAR]
    python -m judgebias.cache verify [--cache-dir DIR]

Exit codes as for runs: 0 done, 2 a user error (one line naming the file or setting and the fix).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from judgebias.cache import BACKENDS, URL_ENV, open_store
from judgebias.cache.bundle import export_bundle, import_bundle, read_run_keys
from judgebias.cache.disk import ReplyCache
from judgebias.config.schema import CacheMode
from judgebias.core.errors import UserError
from judgebias.process import startup
from judgebias.process.command import CommandParser, exit_as_command, prog, run_command, say


def default_cache_dir() -> str:
    """The cache folder runs use by default (conf/config.yaml's cache.dir)."""
    return os.environ.get("JUDGEBIAS_CACHE_DIR") or str(Path(os.environ.get("HOME", ".")) / ".cache" / "judgebias")


def parser() -> argparse.ArgumentParser:
    """The command line of the cache tools."""
    top = CommandParser(prog=prog("cache"), description="Export, import and count cached judge replies.")
    commands = top.add_subparsers(dest="command", required=True)

    def store_options(command: argparse.ArgumentParser) -> None:
        command.add_argument("--backend", choices=BACKENDS, default="disk", help="the cache to read or fill")
        command.add_argument("--cache-dir", default=None, help="the disk cache folder (default: as runs use)")
        command.add_argument(
            "--url-env", default=URL_ENV, help=f"env var holding the Redis URL (default {URL_ENV})", metavar="VAR"
        )

    export = commands.add_parser("export", help="write replies (all, or one run's) to a bundle file")
    export.add_argument("file", type=Path)
    export.add_argument("--run", type=Path, default=None, help="a run or sweep folder: only the replies it used")
    store_options(export)
    load = commands.add_parser("import", help="load a bundle into a cache, checking every entry")
    load.add_argument("file", type=Path)
    store_options(load)
    stats = commands.add_parser("stats", help="entries and size of a cache")
    store_options(stats)
    verify = commands.add_parser("verify", help="check a disk cache for damage, and count the replies it can read")
    verify.add_argument("--cache-dir", default=None, help="the disk cache folder (default: as runs use)")
    return top


def _verify(cache_dir: str) -> None:
    """Check a disk cache and say what is damaged; a damaged one ends with exit 2, naming how to go on."""
    store = ReplyCache(cache_dir, CacheMode.use)
    try:
        found = store.verify()
    finally:
        store.close()
    say(f"{cache_dir}: {found['readable']} readable replies, {found['unreadable']} unreadable")
    if not found["ok"]:
        for problem in found["problems"]:
            say(f"  {problem}")
        raise UserError(
            f"the cache at {cache_dir!r} is damaged: export what is readable (python -m judgebias.cache export "
            f"FILE --cache-dir {cache_dir!r}), move cache.db aside, and import the bundle into a new cache"
        )


def _run(args: argparse.Namespace) -> None:
    """Export, import or count on the store the options name, and say what was done."""
    if args.command == "verify":
        _verify(args.cache_dir or default_cache_dir())
        return
    run = read_run_keys(args.run) if args.command == "export" and args.run is not None else None
    store = open_store(args.backend, args.cache_dir or default_cache_dir(), "use", args.url_env)
    try:
        if args.command == "export":
            manifest = export_bundle(store, args.file, run)
            say(f"wrote {manifest['entries']} replies from {store.describe()} to {args.file}")
        elif args.command == "import":
            manifest, added, present = import_bundle(store, args.file)
            say(
                f"checked {manifest['entries']} replies in {args.file}: {added} added to {store.describe()}, "
                f"{present} already there"
            )
        else:
            stats = store.stats()
            say(f"{store.describe()}: {stats['entries']} replies, {stats['bytes']} bytes")
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    """Run one cache command; returns the exit code."""
    startup.run_begins()  # from here on Ctrl-C is a KeyboardInterrupt, said in one line by the caller
    args = parser().parse_args(argv)
    return run_command(lambda: _run(args))


if __name__ == "__main__":
    exit_as_command(main, "interrupted: the replies stored so far stay; run the same command again")
