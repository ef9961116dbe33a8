"""nl_roundtrip_reward on hand-made word problems: procedural ones (recovered exactly by the parser extractor), wrong
ones, guard failures, leaked notation, malformed completions; one slow test with the embedded model as extractor."""

from __future__ import annotations

import random
from typing import Any

import pytest

from dsl.expr.assembly import random_assembly
from dsl.expr.domains import get_domain
from dsl.expr.procedural import render_procedure
from dsl.expr.serialize import parse_infix, to_json_ast, to_sexpr
from dsl.expr.tree import Node
from eval.nl.models import parser_extract
from eval.rewards.nl import NLRoundTripReward, procedural_extract


def infix(text: str, domain: str = "arithmetic") -> Node:
    return parse_infix(text, get_domain(domain).syntax)


def story(node: Node, domain: str = "arithmetic", seed: int = 0) -> str:
    return render_procedure(node, domain, random.Random(seed))


def chat(content: Any) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": content}]


def scored(reward: NLRoundTripReward, completions: list[Any], node: Node, domain: str = "arithmetic") -> list[Any]:
    seen: dict[str, list[str]] = {}
    out = reward(
        completions=completions,
        expression=[to_sexpr(node)] * len(completions),
        domain=[domain] * len(completions),
        log_extra=seen.__setitem__,
    )
    return list(zip(out, seen["nl_roundtrip_reward_verdict"], strict=True))


TARGET = infix("(A - B) * (C + 3)")


def test_procedural_word_problems_round_trip_in_every_domain() -> None:
    reward = NLRoundTripReward()
    logic = infix("(A & B) -> (C | D)", "logic")
    assembly = random_assembly(random.Random(3), 3)
    for node, domain in ((TARGET, "arithmetic"), (logic, "logic"), (assembly, "assembly")):
        texts = [story(node, domain, seed) for seed in range(3)]
        assert scored(reward, texts, node, domain) == [(1.0, "correct")] * 3
    labelled = [f"Word problem: {story(TARGET)}", chat(f'"{story(TARGET)}"'), f"{story(TARGET)}\nExpression: A"]
    assert scored(reward, labelled, TARGET) == [(1.0, "correct")] * 3  # cleaned as `kt nl run` does


def test_word_problems_of_other_expressions_are_wrong() -> None:
    others = [infix("(A - B) * (C + 4)"), infix("(B - A) * (C + 3)"), infix("A - B * (C + 3)")]
    got = scored(NLRoundTripReward(failure_reward=-1.0), [story(node) for node in others], TARGET)
    assert got == [(-1.0, "wrong")] * 3


def test_guard_failures_score_zero_with_the_guard_verdict() -> None:
    procedure = story(TARGET)
    completions = {
        "leak": "Multiply {A} - {B} by {C}+3.",
        "paren_leak": f"{procedure} Think of it as ({{A}} less {{B}}) times {{C}} plus 3.",
        "missing_placeholder": procedure.replace("{C}", "the third number"),
        "degenerate": f"{procedure} " + "and then we add it all up again " * 4,
        "no_output": "",
    }
    got = scored(NLRoundTripReward(), list(completions.values()), TARGET)
    assert got == [(0.0, verdict) for verdict in completions]
    malformed = scored(NLRoundTripReward(), [chat(None), [], "   ", "Word problem:"], TARGET)
    assert malformed == [(0.0, "no_output")] * 4


def test_notation_and_free_prose_earn_nothing_from_the_parser_extractor() -> None:
    json_ast = to_json_ast(TARGET)
    for name in ("A", "B", "C"):
        json_ast = json_ast.replace(f'"{name}"', f'"{{{name}}}"')
    assert parser_extract(json_ast, "arithmetic") is not None  # eval's parser reads it ...
    assert procedural_extract(json_ast, "arithmetic") is None  # ... the reward's does not
    prose = ["Take {B} from {A}, then multiply by {C} plus 3.", "Take {A}, {B} and {C}."]
    assert scored(NLRoundTripReward(), prose, TARGET) == [(0.0, "no_expression")] * 2
    assert scored(NLRoundTripReward(), [json_ast], TARGET) == [(0.0, "leak")]  # the guard sees its quoted operators


def test_strict_guard_catches_a_minus_between_operands() -> None:
    text = f"{story(TARGET)} In short, {{A}} - {{B}} comes first."
    assert scored(NLRoundTripReward(), [text], TARGET) == [(0.0, "no_expression")]
    assert scored(NLRoundTripReward(strict_guard=True), [text], TARGET) == [(0.0, "leak")]


def test_mixed_batch_keeps_each_score_and_bad_rows_fail() -> None:
    reward = NLRoundTripReward()
    logic = infix("A ^ B", "logic")
    completions = [story(TARGET), "{A} * {B}", story(logic, "logic"), story(TARGET), story(TARGET)]
    out = reward(
        completions=completions,
        expression=[to_sexpr(TARGET), to_sexpr(TARGET), to_sexpr(logic), "(+ A", to_sexpr(TARGET)],
        domain=["arithmetic", "arithmetic", "logic", "arithmetic", "chemistry"],
    )
    assert out == [1.0, 0.0, 1.0, 0.0, 0.0]


@pytest.mark.slow
def test_embedded_model_extractor() -> None:
    """The embedded model reads two word problems (greedy, once loaded); whatever it answers is judged."""
    reward = NLRoundTripReward(extractor="smollm2-135m-instruct", max_new_tokens=24, shots=1)
    target = infix("A + B")
    completions = [story(target), "Sam has {A} apples and buys {B} more. How many apples does he have?"]
    first = scored(reward, completions, target)
    backend = reward._backend
    assert backend is not None
    for value, verdict in first:
        assert verdict in {"correct", "wrong", "no_expression"}
        assert value == (1.0 if verdict == "correct" else 0.0)
    assert scored(reward, completions[:1], target) == first[:1]  # greedy: the same answer again
    assert reward._backend is backend  # loaded once
