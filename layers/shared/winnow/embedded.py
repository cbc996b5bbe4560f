"""The embedded default's adapters (the folder bucket, the SQLite ledger and conversation store, the
in-process queue, Qdrant Edge, the ONNX embedder) ship with the local tools, never in the Lambda layer.
The composition root finds them by name through the ``winnow.embedded`` entry points the local package
declares (pyproject.toml), so the shipped package never imports the local one and the layer carries none
of them. Finding them reads every installed distribution's metadata (about 10 ms), so a process does it
once: what is installed does not change while it runs, and each container asks for several adapters."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from winnow.errors import ConfigurationError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUP = "winnow.embedded"


@lru_cache(maxsize=1)
def installed() -> dict[str, EntryPoint]:
    """The ``winnow.embedded`` entry points installed, by name (read once a process)."""
    from importlib.metadata import entry_points

    return {entry.name: entry for entry in entry_points(group=GROUP)}


def embedded(name: str, *, instead: str) -> Any:
    """The local adapter ``name`` (a class or a factory). ``instead`` names the setting of the service
    it stands in for, for the error where the local tools are not installed (the Lambda layer)."""
    entry = installed().get(name)
    if entry is not None:
        return entry.load()
    raise ConfigurationError(
        f"the embedded default's {name} is not installed here (it ships with the local tools: "
        f"`make install`, or `pip install -e .`); set {instead} to use the service instead"
    )
