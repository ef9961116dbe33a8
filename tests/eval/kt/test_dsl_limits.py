"""Programs a model may write that the KT score must not reward: literals the uniform prior cannot encode (the
Chinese-remainder template that "compresses" any sequence) and programs too costly to run (a 4 KB `scan_add` chain,
thousand-digit moduli). Each gets a verdict of its own, in evaluation and as a reward, and the official generator's
programs keep theirs."""

from __future__ import annotations

import random
import time
import tracemalloc

import pytest

from dsl.bits import program_bits, unencodable_literal
from dsl.program import render_program
from dsl.sampler import sample_program
from eval.kt.checking import CheckConfig, Verdict, check_dsl
from eval.rewards.kt import KTCompressionReward
from tests.kt_templates import crt_template

UNIFORM = CheckConfig(uniform_prior_range=256)


def test_the_crt_template_prints_any_sequence_but_is_never_correct() -> None:
    rng = random.Random(0)
    for n in (1, 2, 3, 6, 9, 40):  # X has 9, 18, 27, 62, 102 and 569 bits
        sequence = [rng.randrange(256) for _ in range(n)]
        template = crt_template(sequence)
        unlimited = CheckConfig(max_dsl_int_bits=1 << 20)  # the gzip prior prices its text: no encodability check
        assert check_dsl(template, sequence, unlimited, None).verdict == Verdict.CORRECT  # the template works
        literal = int(template.split(",", 1)[1].split(")", 1)[0])
        verdict = check_dsl(template, sequence, UNIFORM, None).verdict
        assert verdict == (Verdict.RESOURCE if literal.bit_length() > 64 else Verdict.UNENCODABLE), n


def test_the_crt_template_earns_no_reward_and_the_gold_program_does() -> None:
    sequence = [7, 1, 200, 3, 9, 9, 0, 255, 4]
    gold = f"sequence_1 = set_list({sequence})\noutput = sequence_1"
    reward = KTCompressionReward(mode="dsl")
    seen: dict[str, list[str]] = {}
    metrics: dict[str, float] = {}
    rewards = reward(
        completions=[
            gold,
            crt_template(sequence),
            crt_template(sequence[:2]),
            "sequence_1 = set_list([1])\noutput = x",
        ],
        sequence=[sequence, sequence, sequence[:2], sequence],
        log_extra=seen.__setitem__,
        log_metric=metrics.__setitem__,
    )
    assert rewards[0] > 0 and rewards[1:] == [0.0, 0.0, 0.0]
    assert seen["kt_compression_reward_verdict"] == ["correct", "resource", "unencodable", "syntax_error"]
    assert metrics["kt_compression_reward/hack_rate"] == 0.5  # resource and unencodable, not the syntax error
    raw = 8 * len(sequence)  # the task's own measures, as `kt eval kt` scores each sample
    gold_rate = (1 + program_bits(gold)) / raw
    assert metrics["kt_compression_reward/accuracy"] == 0.25
    assert metrics["kt_compression_reward/compression_rate"] == pytest.approx(
        (gold_rate + 2 * (1 + raw) / raw + (1 + 16) / 16) / 4
    )


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("s = range_func_interval(200, 256, 5)", None),  # the sampler's exclusive end reaches max_value + 1
        ("s = range_func_interval(200, 257, 5)", "argument 2 = 257 is outside 0..256"),
        ("s = range_func_interval(1, 9, 9)", "argument 3 = 9 is outside 1..8"),
        ("s = range_func_up(-1, 4)", "argument 1 = -1 is outside 0..256"),
        ("s = set_list([1, 300, 2])", "list item 300 is outside 0..256"),
        ("s = repeat_num(25, 255)", None),  # counts and indices select or repeat: their information is the length's
        ("t = repeat_num(500, 1)\ns = get_subsequence_between_indices(t, 0, 437)", None),  # as the sampler writes
        ("s = repeat_num(3, " + "9" * 40 + ")", "argument 2 = 9999999999...(40 digits) is outside 0..256"),
    ],
)
def test_unencodable_literals_are_named(line: str, problem: str | None) -> None:
    found = unencodable_literal(f"{line}\noutput = s")
    assert found == problem if problem is None else problem in (found or "")


SCAN_ADD_CHAIN = (
    "sequence_1 = range_func_up(1, 100000)\n"
    + "".join(f"sequence_{i + 1} = scan_add(sequence_{i})\n" for i in range(1, 121))
    + "output = sequence_121"
)
BIG_MODULUS = (
    "sequence_1 = set_list([5, 7, 9])\n"
    + "".join(f"sequence_{i + 1} = modulo_item_list(sequence_{i}, {'7' * 4299})\n" for i in range(1, 81))
    + "output = sequence_81"
)
WIDE_READS = (
    "sequence_1 = repeat_num(1000000, 3)\n"
    + "".join(f"sequence_{i + 1} = max_n(sequence_1, 1)\n" for i in range(1, 80))
    + "output = sequence_80"
)


@pytest.mark.parametrize("program", [SCAN_ADD_CHAIN, BIG_MODULUS, WIDE_READS], ids=["scan_add", "modulus", "reads"])
def test_costly_programs_stop_with_resource_in_2_s_and_256_mib(program: str) -> None:
    assert len(program) > 2000  # kilobytes of program text, as a model can write
    config = CheckConfig(max_dsl_elements=1_000_000)
    start = time.perf_counter()
    result = check_dsl(program, [1, 2, 3], config, None)
    seconds = time.perf_counter() - start
    tracemalloc.start()
    try:
        check_dsl(program, [1, 2, 3], config, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.verdict == Verdict.RESOURCE, result
    assert seconds < 2.0 and peak < 256 * 2**20, (seconds, peak)


@pytest.mark.slow
def test_generated_programs_keep_their_verdict_and_bits() -> None:
    """The limits and the pricing never touch what the official generator writes: 100,000 sampled programs (~30 s)
    stay correct at their official bits."""
    rng = random.Random(7)
    for _ in range(100_000):
        program, sequence = sample_program(rng)
        text = render_program(program)
        assert unencodable_literal(program) is None, text
        check = check_dsl(text, sequence, UNIFORM, None)
        assert check.verdict == Verdict.CORRECT, (text, check)
        assert program_bits(text) == program_bits(program)
