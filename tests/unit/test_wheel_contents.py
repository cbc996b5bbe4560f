"""What the wheel ships: the product's packages, never the lab (training/) or the benchmarks."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_ships_the_product_and_the_relevance_artifact_but_no_lab_or_benchmarks() -> None:
    # Given the packages setuptools finds with pyproject's own rules
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = config["packages"]["find"]
    packages = {
        package
        for where in found["where"]
        for package in find_packages(str(ROOT / where), include=found["include"])
    }
    # Then the product is there, and neither benchmarks nor training, nor anything under them
    assert {"winnow", "winnow.search", "functions.search", "winnow_local", "winnow_fakes"} <= packages
    assert not {p for p in packages if p.split(".")[0] in {"benchmarks", "training", "tests"}}
    assert set(config["package-data"]) <= {"winnow", "winnow_local"}
    # And the relevance artifact the search reads ships as package data
    assert "search/models/*.json" in config["package-data"]["winnow"]
    assert list((ROOT / "layers/shared/winnow/search/models").glob("*.json"))
