"""Benchmarks that print ratios against their anchors (see bench/RESULTS.md)."""
