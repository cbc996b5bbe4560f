"""Running the ``winnow`` command as a user does: ``python -m winnow_local`` in a subprocess with its own
WINNOW_HOME and none of the AWS or Voyage variables; ``LEAVE`` is a short policy document to ingest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LEAVE = """# Parental Leave

## Length of leave

New parents at Orchard Robotics receive eighteen weeks of fully paid parental leave, which they can
split into two blocks within a year of the child's arrival. Adoptive and foster parents receive the
same leave, and it starts on the day the child arrives home. Tell the people team eight weeks ahead.

## Returning to work

During the first month back, parents may work half days for full pay. Your role, level and salary are
protected while you are away, and you stay eligible for salary reviews and bonuses during the leave.
"""


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


class Winnow:
    """Runs ``python -m winnow_local`` against one WINNOW_HOME."""

    def __init__(self, home: Path, **env: str) -> None:
        self.home = home
        self.env = {**os.environ, "WINNOW_HOME": str(home), **env}
        for name in ("VOYAGE_API_KEY", "QDRANT_URL", "WINNOW_BUCKET", "WINNOW_LEDGER_TABLE"):
            self.env.pop(name, None)

    def __call__(self, *args: str, **env: str) -> Run:
        done = subprocess.run(
            [sys.executable, "-m", "winnow_local", *args],
            cwd=self.home.parent,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        return Run(done.returncode, done.stdout, done.stderr)
