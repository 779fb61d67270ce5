"""Compact renderings of evidence, one module per kind; each states what it elided."""
