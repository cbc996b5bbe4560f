"""What this test process holds resident, read from ``/proc/self/smaps`` (Linux)."""

from __future__ import annotations

from pathlib import Path


def resident_kb(path: Path) -> int:
    """This process's resident kilobytes in its mappings of ``path``: the file, or every file under the
    folder."""
    total, current = 0, ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields[0] == "Rss:":
            total += int(fields[1]) if current == str(path) or current.startswith(f"{path}/") else 0
        elif not fields[0].endswith(":"):
            current = fields[5] if len(fields) > 5 else ""
    return total
