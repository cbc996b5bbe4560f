"""The documents of the passage-level benchmark (``training.passages``): long technical documents this
machine ships, read at run time from ``/usr/share`` (never copied into the repository), in two kinds of
source:

- ``man``: manual pages rendered as text the way a user saves one (``MANWIDTH=80 man -P cat grep``);
- ``manuals``: longer manuals in their shipped formats: GNU info (gzip'd), HTML (libffi's manual, the
  base-passwd guide), Markdown (pip's documentation) and PDF (two specifications).

A document that is missing on a machine is left out, with the questions written on it, and the report
names what was used. ``render`` is the one place that turns a source into the bytes that are uploaded.
"""

from __future__ import annotations

import gzip
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

MAN_PAGES = (
    "grep", "sed", "tar", "gzip", "ssh", "xargs", "make", "useradd", "apt-get", "python3",
    "patch", "date", "ps", "diff", "journalctl", "unzip", "mawk", "less",
)  # fmt: skip
INFO = Path("/usr/share/info")
DOC = Path("/usr/share/doc")
PIP = DOC / "python3-pip/html"
MANUALS = {
    # name: (format, path)
    "wget.info": ("info", INFO / "wget.info.gz"),
    "bc.info": ("info", INFO / "bc.info.gz"),
    "ed.info": ("info", INFO / "ed.info.gz"),
    "time.info": ("info", INFO / "time.info.gz"),
    "users-and-groups.html": ("html", DOC / "base-passwd/users-and-groups.html"),
    "shared-mime-info-spec.pdf": ("pdf", DOC / "shared-mime-info/shared-mime-info-spec.pdf"),
    "libtasn1.pdf": ("pdf", DOC / "libtasn1-doc/libtasn1.pdf"),
    **{f"pip-{p.stem}.md": ("md", p) for p in (
        PIP / "installation.md", PIP / "getting-started.md", PIP / "topics/authentication.md",
        PIP / "topics/https-certificates.md", PIP / "topics/local-project-installs.md",
        PIP / "topics/repeatable-installs.md", PIP / "reference/requirement-specifiers.md",
        PIP / "topics/python-option.md",
    )},
    "python-policy.html": ("html", DOC / "python3/python-policy.html"),
    "zlib_how.html": ("html", DOC / "zlib1g-dev/examples/zlib_how.html"),
}  # fmt: skip


@dataclass(frozen=True)
class Source:
    """One document: its upload name (the key under the tenant), its kind of source and its format."""

    name: str
    source: str  # "man" | "manuals"
    format: str  # "man" | "info" | "html" | "md" | "pdf"


def sources() -> list[Source]:
    """Every document the benchmark knows, whether or not this machine has it."""
    found = [Source(f"{page}.1.txt", "man", "man") for page in MAN_PAGES]
    found += [Source(name, "manuals", fmt) for name, (fmt, _) in MANUALS.items()]
    return found


def render(source: Source) -> bytes | None:
    """The bytes a user would upload for ``source``, or None when this machine lacks it."""
    if source.format == "man":
        page = source.name.removesuffix(".1.txt")
        env = {**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""}
        try:
            done = subprocess.run(
                ["man", "-P", "cat", page], capture_output=True, env=env, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 and done.stdout.strip() else None
    _, path = MANUALS[source.name]
    if not path.is_file():
        return None
    data = path.read_bytes()
    if path.suffix == ".gz" and source.format != "info":
        data = gzip.decompress(data)
    return data


def upload_name(source: Source) -> str:
    """The key a document is uploaded under: info files keep their ``.info.gz`` suffix (the parser
    reads them gzip'd, as they ship)."""
    return source.name + ".gz" if source.format == "info" else source.name
