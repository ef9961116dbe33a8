"""The communication matrix and what is read off it, on hand-made grids whose numbers are worked out in comments."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pandas as pd
import pytest

from eval.nl.matrix import (
    accuracy_by,
    communication_matrix,
    nl_tax,
    nl_tax_by,
    role_swap,
    self_vs_cross,
    structured_generators,
)

EXPRESSIONS = ("e1", "e2", "e3", "e4")
K = {"e1": 2, "e2": 2, "e3": 3, "e4": 3}


def grid(
    correct: Mapping[tuple[str, str], Iterable[str]],
    kinds: Mapping[str, str] | None = None,
    guards: Mapping[tuple[str, str], str] | None = None,
    expressions: Iterable[str] = EXPRESSIONS,
) -> pd.DataFrame:
    """One row per (expression, generator, extractor) for the (generator, extractor) pairs of `correct`, which maps
    each pair to the expressions it gets right; `guards` maps (expr_id, generator) to a failed guard check."""
    kinds, guards = kinds or {}, guards or {}
    rows = []
    for (generator, extractor), right in correct.items():
        right = set(right)
        for expr_id in expressions:
            guard = guards.get((expr_id, generator), "pass")
            assert guard == "pass" or expr_id not in right, "a guard failure is never correct"
            rows.append(
                {
                    "expr_id": expr_id,
                    "k": K[expr_id],
                    "generator": generator,
                    "extractor": extractor,
                    "generator_kind": kinds.get(generator, "nl"),
                    "guard": guard,
                    "leak_pass": guard != "leak",
                    "correct": expr_id in right,
                }
            )
    return pd.DataFrame(rows)


# Generators A, B (NL); extractors A, B, C. A's e4 leaks; B's e3 misses a placeholder (passes the leak check).
CELLS = {
    ("A", "A"): {"e1", "e2", "e3"},  # 75
    ("A", "B"): {"e1", "e2"},  # 50
    ("A", "C"): {"e1"},  # 25
    ("B", "A"): {"e1"},  # 25
    ("B", "B"): {"e1", "e2"},  # 50
    ("B", "C"): set(),  # 0
}
GUARDS = {("e4", "A"): "leak", ("e3", "B"): "missing_placeholder"}
# Lossless serializers read by the same extractors.
STRUCTURED = {
    ("sexpr", "A"): set(EXPRESSIONS),  # 100
    ("sexpr", "B"): {"e1", "e2"},  # 50
    ("sexpr", "C"): {"e1"},  # 25
    ("json", "A"): {"e1", "e2", "e3"},  # 75
    ("json", "B"): {"e1", "e2", "e4"},  # 75
    ("json", "C"): set(),  # 0
}
KINDS = {"sexpr": "structured", "json": "structured"}


@pytest.fixture
def table() -> pd.DataFrame:
    return grid({**CELLS, **STRUCTURED}, KINDS, GUARDS)


def test_cells_are_accuracies_with_extractors_as_rows(table: pd.DataFrame) -> None:
    matrix = communication_matrix(table)
    assert matrix.extractors == ["A", "B", "C"] and matrix.generators == ["A", "B"]  # structured ones left out
    assert matrix.cells.loc["A"].tolist() == [75.0, 25.0]
    assert matrix.cells.loc["B"].tolist() == [50.0, 50.0]
    assert matrix.cells.loc["C"].tolist() == [25.0, 0.0]
    assert (matrix.n == 4).all().all()
    assert matrix.mean_cell == pytest.approx(225 / 6)


def test_marginals_are_row_and_column_means_with_population_std(table: pd.DataFrame) -> None:
    matrix = communication_matrix(table)
    assert matrix.extraction_quality.tolist() == [50.0, 50.0, 12.5]
    assert matrix.extraction_std.tolist() == [25.0, 0.0, 12.5]
    assert matrix.generation_quality.tolist() == [50.0, 25.0]
    # column A: 75, 50, 25 (mean 50); column B: 25, 50, 0 (mean 25): both sqrt((625 + 0 + 625) / 3)
    assert matrix.generation_std.tolist() == pytest.approx([math.sqrt(1250 / 3)] * 2)


def test_leak_and_guard_pass_count_word_problems(table: pd.DataFrame) -> None:
    matrix = communication_matrix(table)
    assert matrix.leak_pass.to_dict() == {"A": 75.0, "B": 100.0}  # B's missing placeholder passes the leak check
    assert matrix.guard_pass.to_dict() == {"A": 75.0, "B": 75.0}


def test_explicit_labels_choose_and_order_and_leave_empty_cells(table: pd.DataFrame) -> None:
    matrix = communication_matrix(table, generators=["sexpr", "B"], extractors=["C", "A"])
    assert matrix.generators == ["sexpr", "B"] and matrix.extractors == ["C", "A"]
    assert matrix.cells.loc["C"].tolist() == [25.0, 0.0] and matrix.cells.loc["A"].tolist() == [100.0, 25.0]
    missing = communication_matrix(table, generators=["A", "nobody"])
    assert math.isnan(missing.cells.loc["A", "nobody"]) and missing.n.loc["A", "nobody"] == 0
    assert missing.generation_quality["A"] == 50.0


def test_role_swap_delta(table: pd.DataFrame) -> None:
    swaps = role_swap(communication_matrix(table))
    # only A and B act in both roles: A generates for B 50%, B generates for A 25%
    assert swaps.to_dict("records") == [
        {"model_a": "A", "model_b": "B", "a_to_b": 50.0, "b_to_a": 25.0, "delta": 25.0}
    ]


def test_role_swaps_are_sorted_by_absolute_delta() -> None:
    cells: dict[tuple[str, str], set[str]] = {(g, e): set() for g in "PQR" for e in "PQR"}
    cells |= {("P", "Q"): {"e1"}, ("Q", "P"): {"e1", "e2", "e3"}, ("P", "R"): {"e1", "e2"}, ("R", "P"): {"e1"}}
    swaps = role_swap(communication_matrix(grid(cells)))
    assert [(r.model_a, r.model_b, r.delta) for r in swaps.itertuples()] == [
        ("P", "Q", -50.0),
        ("P", "R", 25.0),
        ("Q", "R", 0.0),
    ]


def test_self_vs_cross(table: pd.DataFrame) -> None:
    result = self_vs_cross(communication_matrix(table))
    assert result["self_mean"] == 62.5 and result["n_self"] == 2  # A reads A 75, B reads B 50
    assert result["cross_mean"] == 25.0 and result["n_cross"] == 4  # 25, 50, 25, 0
    assert result["best_cell"] == {"generator": "A", "extractor": "A", "accuracy": 75.0}
    assert result["best_self"] == {"model": "A", "accuracy": 75.0}
    assert result["best_is_cross"] is False and result["best_minus_best_self"] == 0.0


def test_best_cell_can_be_cross_model() -> None:
    cells = {
        ("P", "P"): {"e1", "e2"},  # 50
        ("P", "Q"): {"e1", "e2", "e3", "e4"},  # 100: Q reading P is the best cell
        ("Q", "P"): set(),
        ("Q", "Q"): {"e1", "e2", "e3"},  # 75: the best self cell
    }
    result = self_vs_cross(communication_matrix(grid(cells)))
    assert result["best_cell"] == {"generator": "P", "extractor": "Q", "accuracy": 100.0}
    assert result["best_self"] == {"model": "Q", "accuracy": 75.0}
    assert result["best_is_cross"] is True and result["best_minus_best_self"] == 25.0


def test_accuracy_by_k_per_generator_and_extractor(table: pd.DataFrame) -> None:
    by_generator = accuracy_by(table, ["k"], "generator")
    # generator A at k=2 (e1, e2): A 2 + B 2 + C 1 of 6; at k=3 (e3, e4): A 1 of 6
    assert by_generator.to_dict("records") == [
        {"generator": "A", "k": 2, "accuracy": pytest.approx(500 / 6), "n": 6},
        {"generator": "A", "k": 3, "accuracy": pytest.approx(100 / 6), "n": 6},
        {"generator": "B", "k": 2, "accuracy": pytest.approx(300 / 6), "n": 6},
        {"generator": "B", "k": 3, "accuracy": 0.0, "n": 6},
    ]
    by_extractor = accuracy_by(table, ["k"], "extractor")
    assert by_extractor.set_index(["extractor", "k"])["accuracy"].loc[("A", 2)] == 75.0  # e1, e2 of A; e1 of B
    assert len(accuracy_by(table, ["k"], "generator", nl_only=False)) == 8
    with pytest.raises(ValueError, match="role"):
        accuracy_by(table, ["k"], "reader")  # type: ignore[arg-type]


def test_nl_tax(table: pd.DataFrame) -> None:
    assert structured_generators(table) == ["sexpr", "json"]
    tax = nl_tax(table)
    assert list(tax.columns) == ["nl", "sexpr", "json", "tax"]
    assert tax["nl"].tolist() == [50.0, 50.0, 12.5]
    assert tax["sexpr"].tolist() == [100.0, 50.0, 25.0] and tax["json"].tolist() == [75.0, 75.0, 0.0]
    assert tax["tax"].tolist() == [50.0, 25.0, 12.5]  # max(structured) - NL
    only_b = nl_tax(table, nl_generators=["B"])  # NL reference restricted to generator B
    assert only_b["nl"].tolist() == [25.0, 50.0, 0.0] and only_b["tax"].tolist() == [75.0, 25.0, 25.0]


def test_nl_tax_without_structured_generators_is_nan(table: pd.DataFrame) -> None:
    tax = nl_tax(table[table["generator_kind"] == "nl"])
    assert list(tax.columns) == ["nl", "tax"] and tax["tax"].isna().all()


def test_nl_tax_by_k() -> None:
    # G (NL) read by X: e1 only -> k=2 50%, k=3 0%; S (structured): e1, e2 -> k=2 100%, k=3 0%
    table = grid({("G", "X"): {"e1"}, ("S", "X"): {"e1", "e2"}}, {"S": "structured"})
    by_k = nl_tax_by(table, "k")
    assert by_k.index.names == ["extractor", "k"]
    assert by_k.loc[("X", 2)].to_dict() == {"nl": 50.0, "S": 100.0, "tax": 50.0}
    assert by_k.loc[("X", 3)].to_dict() == {"nl": 0.0, "S": 0.0, "tax": 0.0}


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match="correct"):
        communication_matrix(pd.DataFrame({"expr_id": [], "generator": [], "extractor": [], "generator_kind": []}))
