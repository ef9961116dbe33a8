"""GRPO row builders of the DSL packages: SeqCoder rows with the DSL format pattern (dsl.seqcoder) and NL generator
rows (dsl.expr.rl_data), checked against real programs, the suite and the rewards that read them."""

from __future__ import annotations

import random
import re

import pytest

from dsl.expr.procedural import render_procedure
from dsl.expr.prompts import generator_prompt
from dsl.expr.rl_data import nl_rl_rows, word_problem_pattern
from dsl.expr.serialize import parse_sexpr
from dsl.expr.suite import SuiteConfig, build_suite
from dsl.parser import parse_program
from dsl.program import render_program
from dsl.sampler import sample_program
from dsl.seqcoder import DSL_FORMAT_PATTERN, seqcoder_prompt, to_seqcoder_rl_row
from kt_train.rewards import format_reward, get_reward

DSL_FORMAT = re.compile(DSL_FORMAT_PATTERN, re.DOTALL)


def sampled_programs(count: int) -> list[tuple[str, list[int]]]:
    rng = random.Random(11)
    return [(render_program(program), values) for program, values in (sample_program(rng) for _ in range(count))]


def test_seqcoder_rl_row() -> None:
    row = to_seqcoder_rl_row({"id": "x", "sequence": (3, 4, 5), "program": "ignored"})
    assert row == {
        "prompt": [{"role": "user", "content": seqcoder_prompt([3, 4, 5])}],
        "sequence": [3, 4, 5],
        "format_pattern": DSL_FORMAT_PATTERN,
    }


def test_dsl_format_pattern_matches_every_sampled_program_with_or_without_values() -> None:
    for text, _ in sampled_programs(300):
        program = parse_program(text)
        assert DSL_FORMAT.fullmatch(text), text
        per_line = [[0]] * program.num_lines
        assert DSL_FORMAT.fullmatch(render_program(program, per_line))
        assert DSL_FORMAT.fullmatch(text.replace("\n", "\n\n", 1).replace(" = ", "=", 1))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "output = sequence_1",  # nothing defined
        "sequence_1 = range_func_up(1, 5)",  # no output line
        "sequence_1 = range_func_up(1, 5)\noutput = sequence_1\nsequence_2 = reverse_list(sequence_1)",
        "Here is the program:\nsequence_1 = range_func_up(1, 5)\noutput = sequence_1",
        "```\nsequence_1 = range_func_up(1, 5)\noutput = sequence_1\n```",
        "sequence_1 = range_func_up(1, 5) + [3]\noutput = sequence_1",
        "sequence_1 = f(g(1))\noutput = sequence_1",
        "def f():\n    return 1\noutput = f",
    ],
)
def test_dsl_format_pattern_rejects_anything_but_program_lines(text: str) -> None:
    assert not DSL_FORMAT.fullmatch(text.strip())


def test_seqcoder_rows_score_their_own_programs() -> None:
    programs = sampled_programs(20)
    rows = [to_seqcoder_rl_row({"sequence": values}) for _, values in programs]
    completions = [[{"role": "assistant", "content": text}] for text, _ in programs]
    columns = {"sequence": [r["sequence"] for r in rows], "format_pattern": [r["format_pattern"] for r in rows]}
    assert format_reward(completions=completions, **columns) == [1.0] * len(rows)
    verdicts: dict[str, list[str]] = {}
    rewards = get_reward("kt_compression")(completions=completions, log_extra=verdicts.__setitem__, **columns)
    assert verdicts["kt_compression_reward_verdict"] == ["correct"] * len(rows)
    assert all(0.5 <= r <= 1.0 for r in rewards)


@pytest.mark.parametrize("domain", ["arithmetic", "logic"])
def test_nl_rows_from_the_suite(domain: str) -> None:
    suite = build_suite(SuiteConfig(domain=domain, k_max=3, d_max=3, max_skeletons=2, instances=2)).rows
    rows = nl_rl_rows(suite, domain, shots=1)
    assert len(rows) == len(suite)
    for row, source in zip(rows, suite, strict=True):
        assert row["prompt"] == [{"role": "user", "content": generator_prompt(source["infix"], domain, 1)}]
        assert (row["id"], row["expression"], row["domain"]) == (source["id"], source["sexpr"], domain)
    stories = [render_procedure(parse_sexpr(r["expression"]), domain, random.Random(0)) for r in rows]
    columns = {key: [r[key] for r in rows] for key in ("expression", "domain", "format_pattern")}
    assert format_reward(completions=stories, **columns) == [1.0] * len(rows)
    assert get_reward("nl_roundtrip")(completions=stories, **columns) == [1.0] * len(rows)
    with pytest.raises(ValueError, match="not logic" if domain == "arithmetic" else "not arithmetic"):
        nl_rl_rows(suite, "logic" if domain == "arithmetic" else "arithmetic")


def test_nl_rows_of_assembly_show_the_s_expression() -> None:
    sexpr = "(mount (polish red-gear) blue-plate)"
    [row] = nl_rl_rows([{"id": "a0", "sexpr": sexpr}], "assembly")
    assert row["prompt"][0]["content"] == generator_prompt(sexpr, "assembly") and row["expression"] == sexpr
    assert re.fullmatch(row["format_pattern"], "Polish the red gear.", re.DOTALL)


def test_word_problem_pattern() -> None:
    pattern = re.compile(word_problem_pattern(["A", "B", "A"]), re.DOTALL)
    assert pattern.fullmatch("Take {B}.\nThen {A}.")
    for bad in ("Take {A}.", "Take {A} and {B}.\nExpression: A + B", "Take {A} and {B}.\n**Answer**: 3", ""):
        assert not pattern.fullmatch(bad)
