"""Procedural word problems: exact round trip for every template, argument order, leakage-free text, parse errors."""

from __future__ import annotations

import random
import re

import pytest

from dsl.expr.arithmetic import ArithmeticConfig, instantiate
from dsl.expr.assembly import random_assembly
from dsl.expr.logic import instantiate_logic
from dsl.expr.procedural import (
    ARITHMETIC_TEMPLATES,
    ASSEMBLY_TEMPLATES,
    LOGIC_TEMPLATES,
    MAX_ORDINAL,
    ordinal,
    parse_arithmetic_procedure,
    parse_assembly_procedure,
    parse_logic_procedure,
    render_arithmetic,
    render_assembly,
    render_logic,
)
from dsl.expr.skeletons import enumerate_skeletons
from dsl.expr.tree import Node, leaf, op
from eval.nl.guard import GuardConfig, check_word_problem

A, B, C = leaf("A"), leaf("B"), leaf("C")
SKELETONS = [s for d in range(1, 7) for k in range(1, 9) for s in enumerate_skeletons(k, d)]
FT_ARITHMETIC = ArithmeticConfig(variables="QRSTUVWXYZ", min_constant=11, max_constant=20)


def _arithmetic_trees(count: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    configs = (ArithmeticConfig(), FT_ARITHMETIC)
    return [instantiate(rng.choice(SKELETONS), rng, configs[i % 2]) for i in range(count)]


def _logic_trees(count: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    return [instantiate_logic(rng.choice(SKELETONS), rng) for _ in range(count)]


def _assembly_trees(count: int, seed: int) -> list[Node]:
    rng = random.Random(seed)
    return [random_assembly(rng, rng.randint(1, 5)) for _ in range(count)]


DOMAINS = {
    "arithmetic": (render_arithmetic, parse_arithmetic_procedure, _arithmetic_trees, ARITHMETIC_TEMPLATES),
    "logic": (render_logic, parse_logic_procedure, _logic_trees, LOGIC_TEMPLATES),
    "assembly": (render_assembly, parse_assembly_procedure, _assembly_trees, ASSEMBLY_TEMPLATES),
}
FORCED = [(name, index) for name, spec in DOMAINS.items() for index in range(len(next(iter(spec[3].values()))))]


def test_every_operator_has_enough_templates() -> None:
    for templates, minimum in ((ARITHMETIC_TEMPLATES, 3), (LOGIC_TEMPLATES, 3), (ASSEMBLY_TEMPLATES, 2)):
        counts = {len(options) for options in templates.values()}
        assert len(counts) == 1 and counts.pop() >= minimum
    assert set(ARITHMETIC_TEMPLATES) == {"+", "-", "*", "/"}
    assert set(LOGIC_TEMPLATES) == {"and", "or", "xor", "implies", "iff"}
    assert len(ASSEMBLY_TEMPLATES) == 13


@pytest.mark.parametrize(("domain", "template"), FORCED)
def test_round_trip_with_each_template_forced(domain: str, template: int) -> None:
    render, parse, trees, _ = DOMAINS[domain]
    rng = random.Random(template)
    for tree in trees(200, seed=template):
        text = render(tree, rng, template)
        assert parse(text) == tree, text


@pytest.mark.parametrize("domain", list(DOMAINS))
def test_round_trip_with_random_templates_uses_them_all(domain: str) -> None:
    render, parse, trees, templates = DOMAINS[domain]
    rng = random.Random(11)
    texts = []
    for tree in trees(300, seed=99):
        text = render(tree, rng)
        assert parse(text) == tree, text
        texts.append(text)
    joined = " ".join(texts)
    for options in templates.values():
        for template in options:
            pattern = re.sub(r"\\\{\d\\\}", "[^.]+?", re.escape(template))  # operands: anything within a sentence
            assert re.search(pattern, joined), template


def test_argument_order_reads_unambiguously() -> None:
    rng = random.Random(0)
    assert render_arithmetic(op("-", A, leaf(3)), rng, 0) == "First, subtract 3 from {A}."
    assert render_arithmetic(op("/", A, B), rng, 0) == "First, divide {A} by {B}."
    assert render_arithmetic(op("-", A, B), rng, 1) == "First, take {B} away from {A}."
    nested = op("*", op("+", A, leaf(3)), op("-", B, C))
    assert render_arithmetic(nested, rng, 0) == (
        "First, add {A} and 3. Second, subtract {C} from {B}. Third, multiply the first result by the second result."
    )
    assert render_logic(op("implies", A, B), rng, 0) == "First, check that whenever {A} holds, {B} holds too."
    mount = op("mount", op("polish", leaf("red-gear")), leaf("blue-plate"))
    assert render_assembly(mount, rng, 0) == (
        "Step 1: Polish the red gear. Step 2: Mount the result of step 1 onto the blue plate."
    )
    layer = op("layer", leaf("red-gear"), leaf("blue-plate"), leaf("gold-disc"))
    assert render_assembly(layer, rng, 1) == (
        "Step 1: Stack the red gear at the bottom, the blue plate in the middle and the gold disc on top."
    )


def test_arithmetic_text_has_no_math_symbols() -> None:
    rng = random.Random(5)
    for tree in _arithmetic_trees(300, seed=5):
        text = render_arithmetic(tree, rng)
        assert not re.search(r"[+*/=^()]", text), text
        assert all(re.fullmatch(r"[a-z]+-[a-z]+", m.group()) for m in re.finditer(r"\S*-\S*", text)), text
        assert sorted(re.findall(r"\{([A-Z])\}", text)) == sorted(tree.variables())


def test_arithmetic_text_passes_the_leakage_guard() -> None:
    rng = random.Random(8)
    for tree in _arithmetic_trees(300, seed=8):
        text = render_arithmetic(tree, rng)
        assert check_word_problem(text, tree.variables(), GuardConfig(strict=True)).verdict == "pass", text


def test_negative_and_large_constants() -> None:
    tree = op("+", op("*", leaf(-7), A), leaf(1234))
    text = render_arithmetic(tree, random.Random(0), 0)
    assert text == "First, multiply negative 7 by {A}. Second, add the first result and 1234."
    assert parse_arithmetic_procedure(text) == tree


def test_long_procedures_use_compound_ordinals() -> None:
    tree = A
    for index in range(25):
        tree = op("+", tree, leaf(index))
    text = render_arithmetic(tree, random.Random(0))
    assert "Twenty-first, " in text and "the twenty-fourth result" in text
    assert parse_arithmetic_procedure(text) == tree


def test_ordinals() -> None:
    words = [ordinal(n) for n in range(1, MAX_ORDINAL + 1)]
    assert words[:3] == ["first", "second", "third"]
    assert (words[10], words[11], words[19], words[20], words[41]) == (
        "eleventh",
        "twelfth",
        "twentieth",
        "twenty-first",
        "forty-second",
    )
    assert len(set(words)) == MAX_ORDINAL
    with pytest.raises(ValueError):
        ordinal(0)
    with pytest.raises(ValueError):
        ordinal(MAX_ORDINAL + 1)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Add {A} and {B}.",
        "Second, add {A} and {B}.",  # wrong marker
        "First, add {A} and {B}. Third, add the first result and 3.",  # skipped ordinal
        "First, add {A} and {B}. Second, add {C} and 3.",  # step 1 never used
        "First, add {A} and the first result.",  # refers to itself
        "First, add {A} and {B}. Second, add the first result and the first result.",  # used twice
        "First, add {A} and {B}. Second, add the third result and 3. Third, add {C} and 4.",  # refers ahead
        "First, add {A} and {B}. Second, add the result of the first step and 3.",  # not our reference phrase
        "First, add {A} plus {B}.",
        "First, frobnicate {A} and {B}.",
        "First, add A and B.",
    ],
)
def test_arithmetic_parse_errors(text: str) -> None:
    with pytest.raises(ValueError):
        parse_arithmetic_procedure(text)


@pytest.mark.parametrize(
    "text",
    [
        "Step 1: Polish the red banana.",
        "Step 2: Polish the red gear.",
        "Step 1: Weld the red gear.",
        "Step 1: Polish the red gear. Step 2: Polish the blue gear.",
        "Step 1: Mix the red gear and the blue gear.",
    ],
)
def test_assembly_parse_errors(text: str) -> None:
    with pytest.raises(ValueError):
        parse_assembly_procedure(text)


def test_logic_rejects_constants_and_arithmetic_wording() -> None:
    with pytest.raises(ValueError):
        render_logic(op("and", A, leaf(1)), random.Random(0))
    with pytest.raises(ValueError):
        parse_logic_procedure("First, add {A} and {B}.")


def test_render_errors() -> None:
    rng = random.Random(0)
    with pytest.raises(ValueError):
        render_arithmetic(A, rng)  # no operator, no steps
    with pytest.raises(ValueError):
        render_arithmetic(op("^", A, B), rng)
    with pytest.raises(ValueError):
        render_arithmetic(op("+", A, B), rng, template=3)
    with pytest.raises(ValueError):
        render_assembly(op("weld", leaf("red-gear")), rng)
    with pytest.raises(ValueError):
        render_assembly(op("polish", leaf("red-banana")), rng)


def test_whitespace_is_normalized() -> None:
    text = "  First,  add {A}\nand 3.\n\nSecond, divide the first result by {B}.  "
    assert parse_arithmetic_procedure(text) == op("/", op("+", A, leaf(3)), B)
