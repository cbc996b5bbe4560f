"""A ``--token-command`` for tests: a script that prints ``token-1``, then ``token-2``, ... one more each
time it runs, as a real command fetches a fresh token each time."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path


def counting_token_command(folder: Path) -> str:
    script = folder / "print_a_token.py"  # not token.py: that would shadow the stdlib module
    script.write_text(
        "import pathlib\n"
        f"counter = pathlib.Path({str(folder / 'count')!r})\n"
        "n = int(counter.read_text()) + 1 if counter.exists() else 1\n"
        "counter.write_text(str(n))\n"
        "print(f'token-{n}')\n"
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
