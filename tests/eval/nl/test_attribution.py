"""Consensus fault attribution on a hand-made 2 generators x 3 extractors table (numbers worked out in comments)."""

from __future__ import annotations

import math
from itertools import combinations

import pandas as pd
import pytest

from eval.nl.attribution import (
    error_types,
    fault_attribution,
    misattribution_bound,
    panel_sensitivity,
    word_problem_votes,
)

TARGET = {"e1": "t1", "e2": "t2", "e3": "t3"}  # the canonical form of each expression
DEPTH = {"e1": 2, "e2": 2, "e3": 3}
# (expr_id, generator) -> guard, canonical per extractor X, Y, Z (None: no parsable output)
PROBLEMS = {
    ("e1", "G1"): ("pass", ("t1", "a", "b")),  # decodable (X); 2 extractor faults; p* 1/3
    ("e2", "G1"): ("pass", ("w", "w", None)),  # nobody; 3 generator faults; p* 2/3, modal "w"
    ("e3", "G1"): ("leak", (None, None, None)),  # guard failure: 3 generator faults; p* undefined
    ("e1", "G2"): ("pass", ("t1", "t1", "t1")),  # everybody: no error; p* 1
    ("e2", "G2"): ("pass", ("u", "t2", None)),  # decodable (Y); 2 extractor faults; p* 1/3
    ("e3", "G2"): ("pass", (None, None, None)),  # nobody, nothing parsed: 3 generator faults; p* 1/3
    ("e1", "S"): ("pass", ("x", "y", "z")),  # a structured generator: never attributed
}
EXTRACTORS = ("X", "Y", "Z")


@pytest.fixture
def table() -> pd.DataFrame:
    rows = []
    for (expr_id, generator), (guard, canonicals) in PROBLEMS.items():
        for extractor, canonical in zip(EXTRACTORS, canonicals):
            correct = canonical == TARGET[expr_id]
            verdict = "guard_fail" if guard != "pass" else "correct" if correct else "wrong"
            rows.append(
                {
                    "expr_id": expr_id,
                    "d": DEPTH[expr_id],
                    "generator": generator,
                    "extractor": extractor,
                    "generator_kind": "structured" if generator == "S" else "nl",
                    "guard": guard,
                    "canonical": canonical,
                    "verdict": verdict,
                    "correct": correct,
                }
            )
    return pd.DataFrame(rows)


def test_word_problem_votes(table: pd.DataFrame) -> None:
    votes = word_problem_votes(table).set_index(["expr_id", "generator"])
    assert len(votes) == len(PROBLEMS) and (votes["n_extractors"] == 3).all()
    assert votes["decodable"].to_dict() == {
        ("e1", "G1"): True,
        ("e2", "G1"): False,
        ("e3", "G1"): False,
        ("e1", "G2"): True,
        ("e2", "G2"): True,
        ("e3", "G2"): False,
        ("e1", "S"): False,
    }
    assert votes["n_correct"].tolist() == [1, 0, 0, 3, 1, 0, 0]
    agreement = votes["agreement"]
    assert agreement[("e1", "G1")] == pytest.approx(1 / 3) and agreement[("e2", "G1")] == pytest.approx(2 / 3)
    assert math.isnan(agreement[("e3", "G1")]) and agreement[("e1", "G2")] == 1.0
    assert agreement[("e3", "G2")] == pytest.approx(1 / 3)  # missing canonicals never agree with each other
    assert votes.loc[("e2", "G1"), "modal_canonical"] == "w" and not votes.loc[("e2", "G1"), "modal_correct"]
    assert votes.loc[("e1", "G2"), "modal_correct"] and pd.isna(votes.loc[("e3", "G2"), "modal_canonical"])
    assert votes["guard_fail"].sum() == 1 and votes.loc[("e2", "G2"), "d"] == 2


def test_votes_of_a_panel(table: pd.DataFrame) -> None:
    votes = word_problem_votes(table, panel=["X", "Z"]).set_index(["expr_id", "generator"])
    assert (votes["n_extractors"] == 2).all()
    assert not votes.loc[("e2", "G2"), "decodable"]  # only Y read it right
    assert votes.loc[("e2", "G1"), "agreement"] == 0.5


def test_fault_attribution_totals(table: pd.DataFrame) -> None:
    result = fault_attribution(table)
    assert result.panel == ["X", "Y", "Z"]
    # G1: 2 ext + 3 gen + 3 gen (guard); G2: 2 ext + 3 gen; S is not an NL generator
    assert (result.n_errors, result.n_generator_faults, result.n_extractor_faults) == (13, 9, 4)
    assert result.generator_fault_rate == pytest.approx(900 / 13)
    assert result.extractor_fault_rate == pytest.approx(400 / 13)


def test_fault_attribution_by_depth(table: pd.DataFrame) -> None:
    by_depth = fault_attribution(table).by_depth
    # d=2: e1/G1 2 ext, e2/G1 3 gen, e2/G2 2 ext; d=3: 3 + 3 gen
    assert by_depth["errors"].to_dict() == {2: 7, 3: 6}
    assert by_depth["gen_fault_pct"].tolist() == pytest.approx([300 / 7, 100.0])
    assert by_depth["ext_fault_pct"].tolist() == pytest.approx([400 / 7, 0.0])


def test_fault_attribution_by_generator(table: pd.DataFrame) -> None:
    by_generator = fault_attribution(table).by_generator
    assert list(by_generator.index) == ["G1", "G2"]
    assert by_generator["errors"].tolist() == [8, 5]
    assert by_generator["gen_fault_pct"].tolist() == pytest.approx([75.0, 60.0])
    assert by_generator["non_decodable"].tolist() == [2, 1]
    # G1: p* 2/3 (e2; the guard failure has none); G2: 1/3 (e3)
    assert by_generator["mean_agreement"].tolist() == pytest.approx([2 / 3, 1 / 3])


def test_single_extractor_panel_blames_every_failure_on_the_generator(table: pd.DataFrame) -> None:
    result = fault_attribution(table, panel=["X"])
    # X fails on e2/G1, e3/G1, e2/G2, e3/G2 and reads nothing right there
    assert (result.n_errors, result.generator_fault_rate) == (4, 100.0)


def test_misattribution_bound(table: pd.DataFrame) -> None:
    bound = misattribution_bound(table)
    # faithful word problems: e1/G1, e1/G2, e2/G2; X right on 2, Y on 2, Z on 1
    assert bound.n_faithful == 3
    assert bound.success_rates.to_dict() == pytest.approx({"X": 2 / 3, "Y": 2 / 3, "Z": 1 / 3})
    assert bound.p_misattribution == pytest.approx((1 / 3) * (1 / 3) * (2 / 3))
    assert (bound.n_non_decodable, bound.n_guard_fail) == (2, 1)  # e2/G1, e3/G2; e3/G1 was rejected by the guard
    assert bound.expected_false_attributions == pytest.approx(2 * 2 / 27)
    assert bound.mean_success_rate == pytest.approx(5 / 9)


def test_panel_sensitivity_leave_one_out(table: pd.DataFrame) -> None:
    table_ = panel_sensitivity(table).set_index("panel")
    assert list(table_.index) == ["full", "without X", "without Y", "without Z"]
    assert (table_["errors"] == 13).all()  # the same errors under every panel
    # without X, e1/G1 is not decodable (+2 generator faults); without Y, e2/G2 (+2); without Z nothing changes
    assert table_["generator_fault_rate"].tolist() == pytest.approx([900 / 13, 1100 / 13, 1100 / 13, 900 / 13])
    assert table_.loc["without Z", "delta_vs_full"] == pytest.approx(0.0)


def test_no_sub_panel_reports_a_lower_generator_fault_rate(table: pd.DataFrame) -> None:
    panels = {"+".join(p): list(p) for size in (1, 2, 3) for p in combinations(EXTRACTORS, size)}
    rates = panel_sensitivity(table, panels).set_index("panel")["generator_fault_rate"]
    for name, panel in panels.items():
        for sub_size in range(1, len(panel)):
            for sub in combinations(panel, sub_size):
                assert rates["+".join(sub)] >= rates[name]
    assert rates["X+Y+Z"] == rates["full"] == rates.min()


def test_unknown_panel_extractor_is_refused(table: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="W"):
        fault_attribution(table, panel=["X", "W"])


def test_no_errors_gives_empty_tables(table: pd.DataFrame) -> None:
    right = table.assign(correct=True, guard="pass")
    result = fault_attribution(right)
    assert result.n_errors == 0 and math.isnan(result.generator_fault_rate)
    assert len(result.by_depth) == 0 and len(result.by_generator) == 0


def test_error_types_share_of_failed_nl_round_trips() -> None:
    rows = [
        {"generator": "g1", "correct": False, "error_type": "operator_count"},
        {"generator": "g1", "correct": False, "error_type": "operator_count"},
        {"generator": "g1", "correct": False, "error_type": "guard_fail"},
        {"generator": "g2", "correct": False, "error_type": "structure"},
        {"generator": "g2", "correct": True, "error_type": None},
        {"generator": "sexpr", "correct": False, "error_type": "parse_error"},  # structured: not counted
    ]
    frame = pd.DataFrame(rows).assign(generator_kind=lambda d: ["nl"] * 5 + ["structured"], expr_id="e", extractor="x")
    table = error_types(frame).set_index("error_type")
    assert table["errors"].to_dict() == {"operator_count": 2, "guard_fail": 1, "structure": 1}
    assert table.loc["operator_count", "share"] == 50.0
    assert table.loc["operator_count", "g1"] == pytest.approx(200 / 3) and table.loc["structure", "g2"] == 100.0
