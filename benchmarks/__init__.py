"""Benchmarks: each runs the system and a baseline side by side and reports ratios."""
