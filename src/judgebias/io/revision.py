"""The git revision of a checkout, for provenance.json: read from the .git files, with `git` itself as the fallback.

Starting a `git` process costs more than the rest of writing a small run's files; reading HEAD and the ref it names
is what `git rev-parse HEAD` does for the ordinary layouts (a clone, a worktree, packed refs). Anything else (no
.git found aside, a layout these files do not answer) asks git.
"""

from __future__ import annotations

from pathlib import Path


def git_revision(start: Path) -> str | None:
    """The commit checked out in the repository holding `start`, or None outside any repository."""
    folder = next((f for f in (start, *start.parents) if (f / ".git").exists()), None)
    if folder is None:
        return None
    try:
        revision = _from_files(folder / ".git")
    except (OSError, UnicodeDecodeError):
        revision = None
    return revision or _from_git(start)


def _from_files(dot_git: Path) -> str | None:
    """HEAD resolved through loose and packed refs; None when these files do not say."""
    git_dir = dot_git
    if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
        pointer = dot_git.read_text(encoding="utf-8").strip()
        if not pointer.startswith("gitdir:"):
            return None
        git_dir = (dot_git.parent / pointer.removeprefix("gitdir:").strip()).resolve()
    head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    if not head.startswith("ref:"):
        return head if _is_sha(head) else None  # a detached HEAD holds the commit itself
    ref = head.removeprefix("ref:").strip()
    common = git_dir
    if (git_dir / "commondir").is_file():  # a worktree keeps branch refs in the main repository
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for base in (git_dir, common):
        loose = base / ref
        if loose.is_file():
            sha = loose.read_text(encoding="utf-8").strip()
            return sha if _is_sha(sha) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _is_sha(sha):
                return sha
    return None


def _from_git(start: Path) -> str | None:
    """`git rev-parse HEAD` run in `start`."""
    import subprocess  # only for a layout the files do not answer (its import costs a small run 9 ms)

    try:
        result = subprocess.run(
            ["git", "-C", str(start), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None if result.returncode == 0 else None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)
