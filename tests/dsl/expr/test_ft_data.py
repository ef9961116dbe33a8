"""Fine-tuning chats: counts, disjoint vocabulary, pair-level split, determinism, the folder sft_nl.py loads."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from dsl.expr.assembly import check_assembly
from dsl.expr.ft_data import MANIFEST, FTDataConfig, build_ft_records, write_ft_dataset
from dsl.expr.procedural import parse_arithmetic_procedure, parse_assembly_procedure
from dsl.expr.prompts import ANSWER_PREFIX, extractor_prompt, generator_prompt
from dsl.expr.serialize import ARITHMETIC, parse_infix, parse_sexpr
from kt_train.training.data import load_training_dataset, to_prompt_completion

SMALL = {"pairs_per_depth": 40, "depths": (2, 3, 4, 5), "seed": 3}


@pytest.fixture(scope="module")
def default_arithmetic() -> dict[str, list[dict]]:
    return build_ft_records(FTDataConfig())


def _all(records: dict[str, list[dict]]) -> list[dict]:
    return records["train"] + records["test"]


@pytest.mark.parametrize("domain", ["arithmetic", "assembly"])
def test_default_counts(domain: str, default_arithmetic: dict[str, list[dict]]) -> None:
    records = default_arithmetic if domain == "arithmetic" else build_ft_records(FTDataConfig(domain="assembly"))
    assert len(records["train"]) == 3600  # 500 pairs x 4 depths x 0.9 x 2 directions
    assert len(records["test"]) == 400
    for split, pairs_per_depth in (("train", 450), ("test", 50)):
        by_depth = Counter(row["depth"] for row in records[split] if row["direction"] == "e->w")
        assert by_depth == dict.fromkeys((2, 3, 4, 5), pairs_per_depth)


def test_arithmetic_vocabulary_is_disjoint_from_evaluation(default_arithmetic: dict[str, list[dict]]) -> None:
    operators = Counter()
    for row in _all(default_arithmetic):
        tree = parse_infix(row["expression"], ARITHMETIC)
        assert set(tree.variables()) <= set("QRSTUVWXYZ")
        assert all(11 <= value <= 20 for value in tree.leaves() if isinstance(value, int))
        assert not set(tree.variables()) & set("ABCDEFGH")
        assert tree.depth == row["depth"] and 2 <= tree.n_ops <= 8
        operators.update(node.op for node, _ in tree.walk() if not node.is_leaf)
    assert set(operators) == {"+", "-", "*", "/"}


def test_pairs_never_straddle_the_split_and_hold_both_directions(default_arithmetic: dict[str, list[dict]]) -> None:
    sides = {split: {row["pair_id"] for row in rows} for split, rows in default_arithmetic.items()}
    assert not sides["train"] & sides["test"]
    directions = defaultdict(list)
    for row in _all(default_arithmetic):
        directions[row["pair_id"]].append(row["direction"])
    assert all(sorted(found) == ["e->w", "w->e"] for found in directions.values())
    expressions = [row["expression"] for row in _all(default_arithmetic) if row["direction"] == "e->w"]
    assert len(expressions) == len(set(expressions))


@pytest.mark.parametrize("domain", ["arithmetic", "assembly"])
def test_chats_match_the_prompts_and_invert(domain: str) -> None:
    records = build_ft_records(FTDataConfig(domain=domain, **SMALL))
    parse_text = parse_arithmetic_procedure if domain == "arithmetic" else parse_assembly_procedure
    by_pair = defaultdict(dict)
    for row in _all(records):
        assert row["domain"] == domain
        assert [m["role"] for m in row["messages"]] == ["user", "assistant"]
        by_pair[row["pair_id"]][row["direction"]] = row["messages"]
    for pair in by_pair.values():
        expression = pair["w->e"][1]["content"].removeprefix(f"{ANSWER_PREFIX} ")
        word_problem = pair["e->w"][1]["content"]
        assert pair["e->w"][0]["content"] == generator_prompt(expression, domain, shots=0)
        assert pair["w->e"][0]["content"] == extractor_prompt(word_problem, domain, shots=0)
        tree = parse_infix(expression, ARITHMETIC) if domain == "arithmetic" else parse_sexpr(expression)
        assert parse_text(word_problem) == tree
        if domain == "assembly":
            check_assembly(tree)


def test_deterministic_for_the_seed() -> None:
    first = build_ft_records(FTDataConfig(**SMALL))
    assert first == build_ft_records(FTDataConfig(**SMALL))
    other = build_ft_records(FTDataConfig(**{**SMALL, "seed": 4}))
    assert [r["expression"] for r in first["train"]] != [r["expression"] for r in other["train"]]


def test_written_folder_loads_for_training(tmp_path: Path) -> None:
    config = FTDataConfig(domain="assembly", **SMALL)
    records = build_ft_records(config)
    out = write_ft_dataset(records, tmp_path / "ft", config)
    shards = ["test-00000-of-00001.parquet", "train-00000-of-00001.parquet"]
    assert sorted(p.name for p in (out / "data").iterdir()) == shards
    for split in ("train", "test"):
        dataset = load_training_dataset(str(out), split)
        assert len(dataset) == len(records[split])
        assert dataset[0]["messages"] == records[split][0]["messages"]
        assert set(dataset["pair_id"]) == {row["pair_id"] for row in records[split]}
    chats = to_prompt_completion(load_training_dataset(str(out), "train"))
    assert chats[0]["completion"] == records["train"][0]["messages"][-1:]
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["config"]["domain"] == "assembly"
    assert manifest["counts"]["train"]["messages"] == len(records["train"])
    assert manifest["counts"]["test"]["pairs"] == len(records["test"]) // 2
    write_ft_dataset(records, out, config)  # rewriting replaces the files and leaves no temporaries
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == sorted([MANIFEST, "README.md", *shards])


@pytest.mark.parametrize(
    ("kwargs", "field_name"),
    [
        ({"domain": "logic"}, "domain"),
        ({"pairs_per_depth": 0}, "pairs_per_depth"),
        ({"depths": (1,)}, "depths"),  # no arithmetic skeleton with k >= 2 has depth 1
        ({"depths": (2, 2)}, "depths"),
        ({"test_fraction": 1.0}, "test_fraction"),
        ({"variables": "qr"}, "variables"),
        ({"min_constant": 30}, "max_constant"),
        ({"domain": "assembly", "generator_shots": 1}, "generator_shots"),
        ({"extractor_shots": 9}, "extractor_shots"),
    ],
)
def test_config_validation(kwargs: dict, field_name: str) -> None:
    with pytest.raises(ValueError, match=field_name):
        FTDataConfig(**kwargs)


def test_too_few_distinct_expressions_is_an_error() -> None:
    # two skeletons x 4 x 4 operators x 3 leaf values ** 3 leaves = 864 trees at most, fewer than asked
    tiny = {"depths": (2,), "operator_counts": (2,), "variables": "QR", "min_constant": 11, "max_constant": 11}
    with pytest.raises(ValueError, match="distinct expressions"):
        build_ft_records(FTDataConfig(pairs_per_depth=1000, max_draws_factor=2, **tiny))
