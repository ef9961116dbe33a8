"""The assembly domain: exact-depth random trees, arities, canonical form and equivalence."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from dsl.expr.assembly import (
    ASSEMBLY_OPERATORS,
    COLOURS,
    OBJECTS,
    PARTS,
    AssemblyConfig,
    assembly_equivalent,
    canonical,
    check_assembly,
    is_degenerate,
    leaf_words,
    parse_leaf_words,
    random_assembly,
)
from dsl.expr.serialize import parse_sexpr, to_sexpr
from dsl.expr.tree import leaf, op

RED, BLUE, GOLD = leaf("red-gear"), leaf("blue-plate"), leaf("gold-disc")


def test_vocabulary() -> None:
    assert len(COLOURS) == len(set(COLOURS)) == 13
    assert len(OBJECTS) == len(set(OBJECTS)) == 13
    assert len(set(PARTS)) == 169
    arities = Counter(spec.arity for spec in ASSEMBLY_OPERATORS.values())
    assert arities == {1: 3, 2: 6, 3: 4}
    commutative = {name for name, spec in ASSEMBLY_OPERATORS.items() if spec.commutative}
    assert commutative == {"weld", "glue", "rivet", "mix", "assort"}


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_random_trees_have_exactly_the_depth(depth: int) -> None:
    for seed in range(150):
        tree = random_assembly(random.Random(seed), depth)
        assert tree.depth == depth
        check_assembly(tree)
        assert not is_degenerate(tree)


def test_operators_are_drawn_uniformly() -> None:
    roots = Counter(random_assembly(random.Random(seed), 2).op for seed in range(2600))
    assert set(roots) == set(ASSEMBLY_OPERATORS)
    assert all(120 <= count <= 290 for count in roots.values()), roots  # expected 200 each


def test_depth_drawn_from_the_config_range_and_deterministic() -> None:
    config = AssemblyConfig(min_depth=3, max_depth=4)
    depths = {random_assembly(random.Random(seed), config=config).depth for seed in range(60)}
    assert depths == {3, 4}
    assert random_assembly(random.Random(5), 4) == random_assembly(random.Random(5), 4)
    assert random_assembly(random.Random(5), 4) != random_assembly(random.Random(6), 4)


def test_depth_must_be_positive() -> None:
    with pytest.raises(ValueError, match="depth"):
        random_assembly(random.Random(0), 0)


def test_leaf_prob_bounds_the_size() -> None:
    chains = [random_assembly(random.Random(s), 4, AssemblyConfig(leaf_prob=1.0)) for s in range(50)]
    assert all(tree.n_ops == 4 for tree in chains)  # only the depth-carrying child is a subtree
    bushy = [random_assembly(random.Random(s), 4, AssemblyConfig(leaf_prob=0.0)) for s in range(50)]
    assert sum(t.n_ops for t in bushy) > sum(t.n_ops for t in chains)


def test_sexpr_round_trip() -> None:
    for seed in range(200):
        tree = random_assembly(random.Random(seed), 1 + seed % 5)
        assert parse_sexpr(to_sexpr(tree)) == tree


def test_commutative_operators_ignore_part_order() -> None:
    assert assembly_equivalent(op("weld", RED, BLUE), op("weld", BLUE, RED))
    assert assembly_equivalent(op("mix", RED, BLUE, GOLD), op("mix", GOLD, RED, BLUE))
    nested = op("assort", op("glue", RED, BLUE), GOLD, op("polish", RED))
    shuffled = op("assort", op("polish", RED), GOLD, op("glue", BLUE, RED))
    assert canonical(nested) == canonical(shuffled)
    assert assembly_equivalent(
        "(rivet red-gear (weld blue-plate gold-disc))", "(rivet (weld gold-disc blue-plate) red-gear)"
    )


def test_non_commutative_operators_keep_part_order() -> None:
    assert not assembly_equivalent(op("mount", RED, BLUE), op("mount", BLUE, RED))
    assert not assembly_equivalent(op("layer", RED, BLUE, GOLD), op("layer", GOLD, BLUE, RED))
    assert not assembly_equivalent(op("thread", RED, BLUE, GOLD), op("thread", RED, GOLD, BLUE))
    assert not assembly_equivalent(op("weld", RED, BLUE), op("glue", RED, BLUE))
    inner_swap = op("mount", op("weld", RED, BLUE), GOLD)
    assert assembly_equivalent(inner_swap, op("mount", op("weld", BLUE, RED), GOLD))
    assert canonical(op("pour", RED, BLUE)) == "(pour red-gear blue-plate)"


def test_malformed_text_raises() -> None:
    with pytest.raises(ValueError):
        assembly_equivalent("(weld red-gear", "(weld red-gear blue-plate)")


@pytest.mark.parametrize(
    "tree",
    [
        op("weld", RED),
        op("polish", RED, BLUE),
        op("paint", RED),
        op("weld", RED, leaf("red-banana")),
        op("label", leaf(3)),
    ],
)
def test_check_assembly_rejects_bad_trees(tree) -> None:
    with pytest.raises(ValueError):
        check_assembly(tree)


def test_degenerate_means_one_part_twice_in_one_step() -> None:
    assert is_degenerate(op("weld", RED, RED))
    assert is_degenerate(op("polish", op("mix", RED, BLUE, RED)))
    assert not is_degenerate(op("weld", RED, op("polish", RED)))


def test_leaf_words() -> None:
    assert leaf_words("red-gear") == "the red gear"
    assert parse_leaf_words("the silver bracket") == "silver-bracket"
    for bad in ("the red banana", "a red gear", "the red"):
        with pytest.raises(ValueError):
            parse_leaf_words(bad)
    with pytest.raises(ValueError):
        leaf_words("A")


@pytest.mark.parametrize(
    ("kwargs", "field_name"),
    [
        ({"min_depth": 0}, "min_depth"),
        ({"min_depth": 4, "max_depth": 3}, "max_depth"),
        ({"leaf_prob": 1.5}, "leaf_prob"),
        ({"max_tries": 0}, "max_tries"),
    ],
)
def test_config_validation(kwargs: dict, field_name: str) -> None:
    with pytest.raises(ValueError, match=field_name):
        AssemblyConfig(**kwargs)
