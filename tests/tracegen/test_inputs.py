"""RTCE benchmark inputs: counts, uniqueness, determinism and per-family sanity."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tracegen.inputs import FAMILIES, LengthRange, category_order, generate_inputs, item_rng

EXPECTED_CATEGORIES = {"patterned": 15, "log": 11, "yaml": 10, "tabular": 10, "dna": 10}


@pytest.fixture(scope="module")
def items():
    return generate_inputs(seed=42, num_inputs=250)


def test_family_category_counts() -> None:
    assert {family: len(gens) for family, gens in FAMILIES.items()} == EXPECTED_CATEGORIES
    order = category_order()
    assert len(order) == len(set(order)) == 56
    assert len({(family, category) for family, category in order}) == 56
    assert {family for family, _ in order[:5]} == set(FAMILIES)
    assert {f for f, _ in category_order(["dna", "log"])} == {"dna", "log"}
    with pytest.raises(ValueError, match="unknown input family audio"):
        category_order(["audio"])


def test_250_unique_and_balanced(items) -> None:
    assert len(items) == 250
    assert len({item.text for item in items}) == 250
    assert len({item.id for item in items}) == 250
    per_category = Counter(item.category for item in items)
    assert len(per_category) == 56
    assert set(Counter((item.family, item.category) for item in items).values()) <= {4, 5}
    families = Counter(item.family for item in items)
    assert set(families) == set(FAMILIES)


def test_deterministic_and_seeded(items) -> None:
    assert generate_inputs(seed=42, num_inputs=250) == items
    other = generate_inputs(seed=7, num_inputs=250)
    assert [item.text for item in other] != [item.text for item in items]


def test_prefix_stable(items) -> None:
    assert generate_inputs(seed=42, num_inputs=30) == items[:30]


def test_lengths_span_short_to_long(items) -> None:
    lengths = [len(item.text) for item in items]
    assert min(lengths) < 10
    assert max(lengths) >= 200
    assert all(item.text for item in items)


def test_item_rng_is_hashed() -> None:
    assert item_rng("log", "db_error", 42, 1).random() != item_rng("log", "db_error", 43, 0).random()
    assert item_rng("log", "db_error", 42, 1).random() == item_rng("log", "db_error", 42, 1).random()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_generator_reasonable(family: str) -> None:
    for category, generate in FAMILIES[family].items():
        for trial in range(20):
            text, metadata = generate(random.Random(trial))
            assert isinstance(text, str) and isinstance(metadata, dict)
            assert 3 <= len(text) <= 600, (category, text)
            assert text.isascii(), (category, text)


def test_log_fields() -> None:
    for category, generate in FAMILIES["log"].items():
        text, meta = generate(random.Random(1))
        assert text.startswith(f"[{meta['timestamp']}] {meta['level']} - {meta['method']} {meta['endpoint']}")
        assert f"user:{meta['user']}" in text and meta["ip"] in text and f"({meta['module']})" in text
        if category == "slow_request":
            assert meta["duration"] > 2.5
        elif category.startswith("level_"):
            assert meta["level"] == category.removeprefix("level_").upper()
            assert meta["duration"] <= 2.5 and meta["module"] not in ("db", "auth")


def test_tables_are_5x5() -> None:
    for category, generate in FAMILIES["tabular"].items():
        text, meta = generate(random.Random(3))
        lines = text.split("\n")
        assert len(lines) == 5 + meta["header_rows"], category
        assert all(line.count(meta["delimiter"]) == 4 for line in lines), category


def test_yaml_indentation_and_multidoc() -> None:
    texts = [generate(random.Random(s))[0] for generate in FAMILIES["yaml"].values() for s in range(10)]
    assert all("\n  " in text for text in texts)
    assert any("\n---\n" in text for text in texts)


def test_dna_family_is_dna(items) -> None:
    """The paper's fifth family: bases only (a FASTA record: a `>` header line, then 60-base lines)."""
    dna = [item for item in items if item.family == "dna"]
    assert {item.category for item in dna} == set(FAMILIES["dna"]) and len(dna) >= 40
    for item in dna:
        lines = item.text.split("\n")
        if item.category == "fasta_record":
            assert lines[0].startswith(">") and all(len(line) <= 60 for line in lines[1:])
            lines = lines[1:]
        assert lines and all(set(line) <= set("ACGT") for line in lines), item
    orfs = [item.text for item in dna if item.category == "orf_like"]
    assert all(t.startswith("ATG") and t[-3:] in ("TAA", "TAG", "TGA") and len(t) % 3 == 0 for t in orfs)


def test_short_windows_keep_every_category_and_are_unique(items) -> None:
    """`LengthRange(4, 16)`: every input a window of 4..16 characters of its category's text (shorter texts whole),
    all lengths drawn, unique, deterministic, every category kept (the small-model main job's inputs)."""
    short = generate_inputs(seed=42, num_inputs=500, lengths=LengthRange(4, 16))
    lengths = Counter(len(item.text) for item in short)
    assert set(lengths) == set(range(4, 17)) and len({item.text for item in short}) == 500
    assert Counter(item.category for item in short).keys() == Counter(item.category for item in items).keys()
    assert generate_inputs(seed=42, num_inputs=500, lengths=LengthRange(4, 16)) == short
    cut = [item for item in short if "window" in item.metadata]
    assert cut and all(len(item.text) < item.metadata["window"][1] for item in cut)
    for bad in ((0, 4), (8, 4)):
        with pytest.raises(ValueError, match="input lengths"):
            LengthRange(*bad)
