"""The expression suite: cells, totals, determinism, persistence; and the domain registry."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import sympy

from dsl.expr.domains import get_domain
from dsl.expr.serialize import ARITHMETIC, parse_infix, parse_json_ast, parse_sexpr
from dsl.expr.skeletons import count_skeletons, enumerate_skeletons, is_feasible, skeleton_id
from dsl.expr.suite import (
    SUITE_PARQUET,
    Suite,
    SuiteConfig,
    build_suite,
    exclude_expressions,
    load_suite,
    write_suite,
)
from kt_train.cli import main as kt_main

SMALL = {"k_min": 2, "k_max": 6, "d_min": 2, "d_max": 5, "max_skeletons": 3, "instances": 2}


@pytest.fixture(scope="module")
def default_suite() -> Suite:
    return build_suite(SuiteConfig())


def test_default_totals(default_suite: Suite) -> None:
    expected = sum(min(count_skeletons(k, d), 50) * 5 for k in range(2, 9) for d in range(2, 7))
    assert default_suite.n_expressions == expected == 2450  # the paper's |D|
    assert sum(cell["n_expressions"] for cell in default_suite.cells) == expected
    assert default_suite.infeasible_cells == [
        (k, d) for k in range(2, 9) for d in range(2, 7) if not is_feasible(k, d)
    ]
    assert (8, 2) in default_suite.infeasible_cells and (2, 3) in default_suite.infeasible_cells


def test_cells_capped(default_suite: Suite) -> None:
    assert len(default_suite.cells) == 35
    for cell in default_suite.cells:
        assert cell["n_skeletons"] == count_skeletons(cell["k"], cell["d"])
        assert cell["n_used"] == min(cell["n_skeletons"], 50)
        assert cell["n_expressions"] == 5 * cell["n_used"]
        assert cell["feasible"] == (cell["n_skeletons"] > 0)
    assert {(c["k"], c["d"]) for c in default_suite.cells if c["n_skeletons"] > 50} == {
        (6, 5),
        (7, 4),
        (7, 5),
        (7, 6),
        (8, 4),
        (8, 5),
        (8, 6),
    }


def test_rows_match_their_trees(default_suite: Suite) -> None:
    domain = get_domain("arithmetic")
    ids = set()
    by_skeleton: dict[str, set[str]] = {}
    for row in default_suite.rows:
        tree = parse_sexpr(row["sexpr"])
        assert (tree.n_ops, tree.depth) == (row["k"], row["d"])
        assert skeleton_id(tree) == row["skeleton"]
        assert skeleton_id(enumerate_skeletons(row["k"], row["d"])[row["skeleton_index"]]) == row["skeleton"]
        assert parse_infix(row["infix"], ARITHMETIC) == tree
        assert parse_json_ast(row["json_ast"]) == tree
        assert row["variables"] == sorted(set(tree.variables()))
        assert row["id"] == f"arithmetic-k{row['k']}-d{row['d']}-s{row['skeleton_index']:03d}-i{row['instance']}"
        assert row["n_add"] + row["n_sub"] + row["n_mul"] + row["n_div"] == row["k"]
        assert 0 <= row["l_T"] < row["k"]
        ids.add(row["id"])
        by_skeleton.setdefault(row["skeleton"], set()).add(row["sexpr"])
    assert len(ids) == len(default_suite.rows)
    assert all(len(sexprs) == 5 for sexprs in by_skeleton.values())  # distinct instances per skeleton
    sample = random.Random(0).sample(default_suite.rows, 50)
    assert all(domain.to_sympy(parse_sexpr(row["sexpr"])).is_finite is not False for row in sample)


def test_subsample_keeps_enumeration_order(default_suite: Suite) -> None:
    indices = [row["skeleton_index"] for row in default_suite.rows if (row["k"], row["d"]) == (8, 6)]
    assert indices == sorted(indices)
    assert len(set(indices)) == 50 and max(indices) < 480


def test_determinism_and_seed() -> None:
    first = build_suite(SuiteConfig(**SMALL))
    again = build_suite(SuiteConfig(**SMALL))
    other = build_suite(SuiteConfig(**SMALL, seed=1))
    assert first.rows == again.rows and first.fingerprint() == again.fingerprint()
    assert other.fingerprint() != first.fingerprint()
    # the chosen skeletons depend on (domain, seed, k, d) only, not on the number of instances
    more = build_suite(SuiteConfig(**{**SMALL, "instances": 3}))
    assert {r["skeleton"] for r in more.rows} == {r["skeleton"] for r in first.rows}
    assert [r["sexpr"] for r in more.rows if r["instance"] < 2] == [r["sexpr"] for r in first.rows]


def test_write_load_round_trip(tmp_path: Path) -> None:
    suite = build_suite(SuiteConfig(**SMALL))
    out = write_suite(suite, tmp_path / "suite", command="python -m dsl.expr.suite x")
    assert load_suite(out) == suite.rows
    meta = json.loads((out / "suite.json").read_text())
    assert meta["fingerprint"] == suite.fingerprint()
    assert meta["n_expressions"] == suite.n_expressions == sum(c["n_expressions"] for c in meta["cells"])
    assert meta["config"]["max_skeletons"] == 3 and meta["command"] == "python -m dsl.expr.suite x"
    assert [tuple(p) for p in meta["infeasible_cells"]] == suite.infeasible_cells
    table = (out / "cells.md").read_text()
    assert "| 6 | - | 3/4 | 3/40 | 3/56 |" in table
    assert not list(out.glob("*.tmp"))


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_suite(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="missing"):
        load_suite(tmp_path)
    (tmp_path / SUITE_PARQUET).parent.mkdir()
    (tmp_path / SUITE_PARQUET).write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="not a readable parquet"):
        load_suite(tmp_path)
    suite = build_suite(SuiteConfig(**SMALL))
    out = write_suite(suite, tmp_path / "ok")
    meta = json.loads((out / "suite.json").read_text())
    meta["fingerprint"] = "0" * 64
    (out / "suite.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="fingerprint"):
        load_suite(out)


def test_exclude_expressions() -> None:
    rows = build_suite(SuiteConfig(**SMALL)).rows
    drop = {rows[0]["sexpr"], rows[5]["sexpr"], "(+ Z Z)"}
    kept = exclude_expressions(rows, drop)
    assert len(kept) == len(rows) - 2 and all(row["sexpr"] not in drop for row in kept)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"domain": "chemistry"}, "domain"),
        ({"k_min": 0}, "k_min"),
        ({"k_min": 5, "k_max": 4}, "k_max"),
        ({"d_min": 0}, "d_min"),
        ({"d_min": 4, "d_max": 3}, "d_max"),
        ({"max_skeletons": 0}, "max_skeletons"),
        ({"instances": 0}, "instances"),
    ],
)
def test_config_validation(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        SuiteConfig(**kwargs)


def test_domain_registry() -> None:
    domain = get_domain("arithmetic")
    assert domain.operators == ("+", "-", "*", "/") and domain.non_commutative == frozenset({"-", "/"})
    node = domain.instantiate(enumerate_skeletons(3, 2)[0], random.Random(1))
    assert node.n_ops == 3 and isinstance(domain.to_sympy(node), sympy.Expr)
    with pytest.raises(ValueError, match="arithmetic, logic"):
        get_domain("chemistry")


def test_logic_suite() -> None:
    pytest.importorskip("dsl.expr.logic")
    domain = get_domain("logic")
    suite = build_suite(SuiteConfig(domain="logic", **SMALL))
    assert suite.n_expressions == sum(min(c["n_skeletons"], 3) * 2 for c in suite.cells)
    for row in suite.rows:
        tree = parse_sexpr(row["sexpr"])
        assert (tree.n_ops, tree.depth) == (row["k"], row["d"])
        assert parse_infix(row["infix"], domain.syntax) == tree
        assert row["id"].startswith("logic-")


def test_kt_nl_suite_writes_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["nl", "suite", "--output", str(tmp_path), "--k-max", "3", "--d-max", "3", "--instances", "2", "--quiet"]
    assert kt_main(argv) == 0
    rows = load_suite(tmp_path)
    assert len(rows) == (2 + 1 + 4) * 2
    assert "14 expressions" in capsys.readouterr().out


def test_a_suite_of_the_older_layout_still_loads(tmp_path: Path) -> None:
    """Suites written before the dataset layout kept their rows in suite.parquet; the recipes' cached suite is one."""
    suite = build_suite(SuiteConfig(**SMALL))
    out = write_suite(suite, tmp_path / "old")
    (out / SUITE_PARQUET).rename(out / "suite.parquet")
    assert load_suite(out) == load_suite(write_suite(suite, tmp_path / "new")) == suite.rows
