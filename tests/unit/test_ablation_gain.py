"""``ablation_gain``: the part's gain paired by question, resampled by group."""

import pytest

from speakerflow.benchmarks.evaluate import ablation_gain, ablation_line


def _report(recalls: dict[str, tuple[str, float]], ablate=None) -> dict:
    return {
        "system": "speakerflow",
        "ablate": ablate,
        "per_question": [
            {"qid": q, "group": g, "recall": {"10": r}} for q, (g, r) in recalls.items()
        ],
    }


FULL = _report({"a1": ("A", 1.0), "a2": ("A", 0.5), "b1": ("B", 0.0), "c1": ("C", 1.0)})
ABL = _report(
    {"a1": ("A", 0.0), "a2": ("A", 0.5), "b1": ("B", 0.5), "c1": ("C", 1.0), "x": ("X", 1)},
    ablate="s2",
)


def test_gain_groups_and_draws():
    g = ablation_gain(FULL, ABL, resamples=2000)
    assert g["gain"] == pytest.approx((1.0 + 0 - 0.5 + 0) / 4)  # "x" has no partner
    assert g["by_group"] == {
        "A": {"questions": 2, "gain": 0.5},
        "B": {"questions": 1, "gain": -0.5},
        "C": {"questions": 1, "gain": 0.0},
    }
    pc = g["percentiles"]
    assert -0.5 <= pc["5"] <= pc["50"] <= pc["95"] <= 0.5
    assert 0 < g["share_above_zero"] < 1 and g["share_at_least_threshold"] <= 1
    assert ablation_gain(FULL, ABL, resamples=2000) == g  # seeded
    assert "adds +0.125" in ablation_line({**ABL, "vs_full": g})


def test_one_group_has_no_spread_and_no_overlap_is_an_error():
    one = ablation_gain(_report({"q": ("A", 1.0)}), _report({"q": ("A", 0.0)}), resamples=50)
    assert one["percentiles"] == {"5": 1.0, "50": 1.0, "95": 1.0}
    assert one["share_above_zero"] == 1.0
    with pytest.raises(ValueError, match="no question"):
        ablation_gain(FULL, _report({"zz": ("A", 1.0)}))
