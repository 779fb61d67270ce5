"""The absorption organ: packages a digest into the structured yield (M5)."""

from organs.absorption.core import summarize, yield_context
from organs.absorption.worker import build_absorption

__all__ = ["build_absorption", "summarize", "yield_context"]
