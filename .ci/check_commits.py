#!/usr/bin/env python3
"""Check the commit messages a branch would land: ``make check-commits [BASE=ref]``.

Every commit since BASE (default ``origin/main``, else ``main``) must have a subject of at most 72
characters, then a blank line and a body that says why. Merge commits are skipped. Prints one line per
problem and exits 1 when there is one, so it can run before a stop or in CI."""

from __future__ import annotations

import subprocess
import sys

MAX_SUBJECT = 72
DEFAULT_BASES = ("origin/main", "main")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def resolves(ref: str) -> bool:
    return (
        subprocess.run(["git", "rev-parse", "--verify", "--quiet", ref], capture_output=True).returncode == 0
    )


def problems(message: str) -> list[str]:
    """What is wrong with one commit message (empty when nothing is)."""
    lines = message.rstrip("\n").split("\n")
    subject = lines[0]
    found = []
    if len(subject) > MAX_SUBJECT:
        found.append(f"subject is {len(subject)} characters (at most {MAX_SUBJECT})")
    if len(lines) > 1 and lines[1].strip():
        found.append("no blank line after the subject")
    if not any(line.strip() for line in lines[1:]):
        found.append("no body saying why")
    return found


def main(argv: list[str]) -> int:
    base = argv[0] if argv else next((ref for ref in DEFAULT_BASES if resolves(ref)), "")
    if not base or not resolves(base):
        print(
            f"check-commits: no base to compare with ({base or ' or '.join(DEFAULT_BASES)}): pass BASE=<ref>"
        )
        return 2
    shas = git("rev-list", "--no-merges", "--reverse", f"{base}..HEAD").split()
    bad = 0
    for sha in shas:
        message = git("log", "-1", "--format=%B", sha)
        for problem in problems(message):
            bad += 1
            print(f"{sha[:10]} {message.splitlines()[0][:60]!r}: {problem}")
    print(f"check-commits: {len(shas)} commit(s) since {base}, {bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
