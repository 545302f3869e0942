"""The one percentile helper of the benchmarks: numpy's linear interpolation, rounded."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pct(values: Sequence[float], q: float, digits: int = 3) -> float | None:
    """The ``q``-th percentile (0-100) of ``values`` rounded to ``digits``; ``None`` when there
    are no values."""
    if len(values) == 0:
        return None
    return round(float(np.percentile(values, q)), digits)
