"""The git revision in provenance.json, read from .git files: the same answer as `git rev-parse HEAD`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from judgebias.io.revision import git_revision

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git program")


def git(folder: Path, *args: str) -> str:
    """Run git in `folder` (an identity of its own, no global config) and return its output."""
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(folder)}
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    done = subprocess.run(["git", *identity, *args], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with two commits and a package folder inside it."""
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    git(root, "init", "-q")
    for text in ("one", "two"):
        (root / "src" / "pkg" / "file.txt").write_text(text, encoding="utf-8")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", text)
    return root


def test_a_clone_with_loose_refs(repo: Path) -> None:
    """A package folder inside a checkout reports the checked-out commit."""
    assert git(repo, "rev-parse", "HEAD") == git_revision(repo / "src" / "pkg")


def test_packed_refs(repo: Path) -> None:
    """After `git pack-refs` (as gc does) the branch is found in packed-refs."""
    git(repo, "pack-refs", "--all")
    assert git(repo, "rev-parse", "HEAD") == git_revision(repo / "src" / "pkg")


def test_a_worktree_and_a_detached_head(repo: Path, tmp_path: Path) -> None:
    """A linked worktree on its own branch, and a detached HEAD, report what each has checked out."""
    worktree = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "side", str(worktree), "HEAD~1")
    assert git(worktree, "rev-parse", "HEAD") == git_revision(worktree / "src" / "pkg")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    assert git(repo, "rev-parse", "HEAD") == git_revision(repo / "src")


def test_outside_any_repository(tmp_path: Path) -> None:
    """A folder in no repository (an installed wheel) has no revision."""
    assert git_revision(tmp_path) is None
