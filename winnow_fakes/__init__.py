"""Test doubles that ship in the package because benchmarks use them too. Standard library only."""
