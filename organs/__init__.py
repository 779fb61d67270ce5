"""Ichor organs: the stomach, absorption and border workers and their runtime."""

from importlib.metadata import version

__all__ = ["__version__"]

# One source: the version in pyproject.toml, as installed.
__version__ = version("ichor-organs")
