"""Seed-level statistics: 95% bootstrap CIs over seed means and paired Wilcoxon tests."""

from __future__ import annotations

import numpy as np
from scipy.stats import wilcoxon


def bootstrap_ci(values, resamples: int = 3000, seed: int = 0) -> list[float]:
    """95% percentile bootstrap CI of the mean of ``values`` (seed-level means)."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return [float(v.mean()), float(v.mean())] if len(v) else [float("nan")] * 2
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(resamples, len(v)))].mean(axis=1)
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def paired_wilcoxon(a, b) -> float | None:
    """Two-sided p of the Wilcoxon signed-rank test on paired seed means (None if all equal or
    n<2)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) < 2 or np.allclose(d, 0):
        return None
    return float(wilcoxon(a, b).pvalue)
