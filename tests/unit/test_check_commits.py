"""``make check-commits``: the commit-message rule of CONTRIBUTING.md, checked on a real git repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "check_commits.py"
GOOD = (
    "Refuse duplicate form fields\n\nTwo fields of one name let a client smuggle a second tenant past review."
)


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "commit", "-q", "--allow-empty", "--cleanup=verbatim", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def check(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=repo, capture_output=True, text=True, check=False
    )


def new_repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    commit(
        tmp_path, "Start\n\nA base with a message of any shape: only later commits are checked." + "x" * 80
    )
    git(tmp_path, "tag", "base")
    return tmp_path


def test_well_formed_commits_since_the_base_pass(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    commit(repo, GOOD)
    commit(repo, "S" * 72 + "\n\nExactly at the limit.")
    done = check(repo, "base")
    assert done.returncode == 0, done.stdout
    assert "2 commit(s) since base, 0 problem(s)" in done.stdout


def test_each_broken_message_is_named_with_its_problem(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    commit(repo, GOOD)
    long = commit(repo, "Make the subject one character too long " + "x" * 33 + "\n\nWhy it matters.")
    glued = commit(repo, "Glue the body to the subject\nwithout the blank line.")
    bare = commit(repo, "Say nothing about why")
    done = check(repo, "base")
    assert done.returncode == 1
    problems = [line for line in done.stdout.splitlines() if not line.startswith("check-commits:")]
    assert problems == [
        f"{long[:10]} 'Make the subject one character too long xxxxxxxxxxxxxxxxxxxx': subject is 73 "
        "characters (at most 72)",
        f"{glued[:10]} 'Glue the body to the subject': no blank line after the subject",
        f"{bare[:10]} 'Say nothing about why': no body saying why",
    ]


def test_the_base_defaults_to_main_when_there_is_no_origin(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "Say nothing about why")
    done = check(repo)
    assert done.returncode == 1
    assert "1 commit(s) since main, 1 problem(s)" in done.stdout


def test_a_base_that_does_not_exist_is_one_line_saying_what_to_pass(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    done = check(repo, "no-such-ref")
    assert done.returncode == 2
    assert done.stdout.strip().endswith("pass BASE=<ref>")
