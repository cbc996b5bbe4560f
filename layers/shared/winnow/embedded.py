"""The embedded default's adapters (the folder bucket, the SQLite ledger and conversation store, the
in-process queue, Qdrant Edge, the ONNX embedder) ship with the local tools, never in the Lambda layer.
The composition root finds them by name through the ``winnow.embedded`` entry points the local package
declares (pyproject.toml), so the shipped package never imports the local one and the layer carries none
of them."""

from __future__ import annotations

from typing import Any

from winnow.errors import ConfigurationError

GROUP = "winnow.embedded"


def embedded(name: str, *, instead: str) -> Any:
    """The local adapter ``name`` (a class or a factory). ``instead`` names the setting of the service
    it stands in for, for the error where the local tools are not installed (the Lambda layer)."""
    from importlib.metadata import entry_points

    for entry in entry_points(group=GROUP, name=name):
        return entry.load()
    raise ConfigurationError(
        f"the embedded default's {name} is not installed here (it ships with the local tools: "
        f"`make install`, or `pip install -e .`); set {instead} to use the service instead"
    )
