"""The plots tell the truth: coincident methods are moved apart and named, a small test set
is flagged, the judge's agreement is printed, and dagger rows get no zero-width CI."""

from __future__ import annotations

from dpmem_eval.pipeline.plots import SMALL_SET, _offsets, _set_size_note
from dpmem_eval.pipeline.stages import judge_note
from dpmem_eval.pipeline.tables import _ci


def test_coincident_points_are_moved_apart_and_others_stay():
    moved = _offsets({"a": (0.95, 0.84), "b": (0.95, 0.84), "c": (0.97, 0.5)}, 0.1, 0.4)
    assert moved["a"] == (0.95, 0.84) and moved["c"] == (0.97, 0.5)
    assert moved["b"][0] > 0.95 and moved["b"][1] == 0.84


def test_a_small_test_set_is_flagged_and_a_full_one_is_not():
    small = _set_size_note({"m": {"x": {"n_test_pairs": 4}}}, "m")
    assert small and small[0].startswith("WARNING: only 4 test pairs")
    small_set = _set_size_note({"m": {"x": {"n_test_pairs": 32}}}, "m")
    assert small_set and small_set[0].startswith("WARNING: only 32 test pairs - a small set")
    full = _set_size_note({"m": {"x": {"n_test_pairs": SMALL_SET}}}, "m")
    assert full and "WARNING" not in full[0]


def test_judge_note_says_when_the_checklist_judge_is_at_chance():
    calibration = {"m": {"n_validation": 10, "validation_accuracy": 0.5, "validation_kappa": 0.03, "validation_auc": 0.51}}
    assert "at chance" in judge_note("checklist-judge", calibration)
    good = {"m": {**calibration["m"], "validation_kappa": 0.8}}
    assert "at chance" not in judge_note("checklist-judge", good)


def test_ci_cells_say_na_instead_of_inventing_bounds():
    assert _ci([float("nan"), float("nan")]) == "n/a"
    assert _ci([0.1, 0.2]) == "[0.100, 0.200]"
