"""kt_compression_reward on hand-made completions: correct (value computed independently), wrong, malformed and, in
Python mode, hostile programs mixed with correct ones."""

from __future__ import annotations

import gzip
import math
import time
from typing import Any

import pytest

from dsl.bits import program_bits
from eval.kt.literal_tail import literal_tail_program
from eval.rewards.kt import KTCompressionReward
from tests.kt_templates import crt_template

SEQUENCE = list(range(1, 41))
PROGRAM = "sequence_1 = range_func_up(1, 40)\noutput = sequence_1"
# Uniform prior by hand (dsl/bits.py table): 2 lines of log2(24 + 1) for the function, range_func_up's 2 bytes.
PROGRAM_BITS = 2 * math.log2(25) + 16
RAW_BITS = 8 * len(SEQUENCE)
LITERAL = f"sequence_1 = set_list({SEQUENCE})\noutput = sequence_1"  # correct, but longer than the raw sequence


def chat(content: Any) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": content}]


def verdicts(reward: KTCompressionReward, completions: list[Any], sequences: list[list[int]]) -> list[Any]:
    seen: dict[str, list[str]] = {}
    rewards = reward(completions=completions, sequence=sequences, log_extra=seen.__setitem__)
    return list(zip(rewards, seen["kt_compression_reward_verdict"], strict=True))


def test_correct_dsl_program_earns_the_linear_shaping_of_its_compression() -> None:
    rate = (1 + PROGRAM_BITS) / RAW_BITS
    expected = 0.5 + 0.5 * (1 - rate)
    [(reward, verdict)] = verdicts(KTCompressionReward(), [PROGRAM], [SEQUENCE])
    assert verdict == "correct" and reward == pytest.approx(expected)
    assert KTCompressionReward(correct_bonus=0.2)(completions=[PROGRAM], sequence=[SEQUENCE]) == [
        pytest.approx(0.2 + 0.8 * (1 - rate))
    ]
    assert KTCompressionReward(shaping="compression")(completions=[PROGRAM], sequence=[SEQUENCE]) == [
        pytest.approx(1 - rate)
    ]
    assert KTCompressionReward(shaping="binary")(completions=[PROGRAM], sequence=[SEQUENCE]) == [1.0]
    # 1 bit per symbol: 40 raw bits, so the same program compresses less
    assert KTCompressionReward(symbol_bits=1)(completions=[PROGRAM], sequence=[SEQUENCE]) == [
        pytest.approx(0.5 + 0.5 * (1 - (1 + PROGRAM_BITS) / 40))
    ]


def test_gzip_prior_counts_the_gzipped_program_text() -> None:
    bits = 8 * len(gzip.compress(PROGRAM.encode(), compresslevel=9, mtime=0))
    reward = KTCompressionReward(prior="gzip", shaping="compression")
    assert reward(completions=[PROGRAM], sequence=[SEQUENCE]) == [pytest.approx(max(0.0, 1 - (1 + bits) / RAW_BITS))]


def test_shorter_correct_programs_earn_more() -> None:
    long_program = (
        "sequence_1 = range_func_up(1, 20)\nsequence_2 = range_func_up(21, 40)\n"
        "sequence_3 = concatenate(sequence_1, sequence_2)\noutput = sequence_3"
    )
    short, long, literal = KTCompressionReward()(completions=[PROGRAM, long_program, LITERAL], sequence=[SEQUENCE] * 3)
    assert short > long > literal == 0.5  # the literal is correct but compresses nothing: the bonus only


def test_wrong_and_malformed_completions_fail_without_raising() -> None:
    wrong = PROGRAM.replace("40", "39")
    completions = [
        wrong,
        "",
        "   \n",
        "garbage garbage",
        PROGRAM[:25],  # truncated
        "sequence_1 = no_such_function(1)\noutput = sequence_1",
        "sequence_1 = range_func_up(1, 10**9)\noutput = sequence_1",
        "sequence_1 = range_func_up(0, 10000000)\noutput = sequence_1",  # over the interpreter's size limit
        chat(None),
        [],
        chat(f"Here it is:\n```\n{PROGRAM}\n```"),  # fenced, in chat format: found and correct
    ]
    got = verdicts(KTCompressionReward(failure_reward=-0.25), completions, [SEQUENCE] * len(completions))
    assert [v for _, v in got] == [
        "wrong_output",
        "no_completion",
        "no_completion",
        "no_code",
        "syntax_error",
        "syntax_error",
        "syntax_error",
        "resource",
        "no_completion",
        "no_completion",
        "correct",
    ]
    assert [r for r, _ in got][:-1] == [-0.25] * (len(completions) - 1)
    assert got[-1][0] > 0.9


def test_rows_with_other_sequences_are_judged_against_their_own() -> None:
    other = [5] * 12
    completions = [PROGRAM, "sequence_1 = repeat_num(12, 5)\noutput = sequence_1", PROGRAM]
    got = verdicts(KTCompressionReward(), completions, [SEQUENCE, other, other])
    assert [v for _, v in got] == ["correct", "correct", "wrong_output"]


def test_a_literal_tail_earns_the_compression_of_the_prefix_the_program_wrote() -> None:
    sequence = [*SEQUENCE, 7, 200, 3]
    right = (
        "sequence_1 = range_func_up(1, 40)\nsequence_2 = set_list([7, 200, 3])\n"
        "sequence_3 = concatenate(sequence_1, sequence_2)\noutput = sequence_3"
    )
    wrong = right.replace("range_func_up(1, 40)", "range_func_up(1, 30)")  # the prefix 1..30, then a wrong line
    tailed = literal_tail_program(wrong, sequence, 8 * len(sequence))
    assert tailed is not None
    rate = (1 + program_bits(tailed.text)) / (8 * len(sequence))
    completions = [right, wrong, "sequence_1 = set_list([2])\noutput = sequence_1", crt_template(sequence)]
    for shaping, expected in (("compression", 1 - rate), ("linear", 0.5 * (1 - rate)), ("binary", 0.0)):
        reward = KTCompressionReward(shaping=shaping, literal_tail=True)
        got = verdicts(reward, completions, [sequence] * 4)
        assert [v for _, v in got] == ["correct", "literal_tail", "wrong_output", "resource"]
        assert got[1][0] == pytest.approx(expected) and got[1][0] < got[0][0]  # never what a correct one earns
        assert [r for r, _ in got[2:]] == [0.0, 0.0]  # no prefix, or a gaming program: nothing to finish
    assert verdicts(KTCompressionReward(), completions, [sequence] * 4)[1] == (0.0, "wrong_output")


@pytest.mark.parametrize(
    "options",
    [
        {"mode": "sql"},
        {"correct_bonus": 2.0},
        {"symbol_bits": 0},
        {"prior": "lz"},
        {"prior": "gzip", "literal_tail": True},
    ],
)
def test_bad_options(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        KTCompressionReward(**options)


HOSTILE = {
    "endless loop": "while True:\n    pass",
    "fork bomb-lite": "import os\nfor _ in range(8):\n    os.fork()\nwhile True:\n    pass",
    "fork and spin": "import os\nfor _ in range(3):\n    os.fork()\nwhile True:\n    pass",
    "huge allocation": "x = bytearray(10**11)\noutput = [1]",
    "exit": "import os\nos._exit(0)",
    "system exit": "import sys\nsys.exit(0)",
    "output too long": "output = list(range(10**6))",
    "not a list": "output = 'abc'",
    # the candidate writes its own report on the result channel (fd 3) and leaves before the checker can
    "forged null report": 'import os\nos.write(3, b\'{"status": "ok", "output": null, "length": 1}\')\nos._exit(0)',
    "forged length": 'import os\nos.write(3, b\'{"status": "ok", "output": [1], "length": "many"}\')\nos._exit(0)',
}


def test_python_mode_hostile_programs_fail_in_bounded_time_and_spare_the_others() -> None:
    correct = "output = list(range(1, 41))"
    completions = [correct, *HOSTILE.values(), f"```python\n{correct}\n```", "output = list(range(40))"]
    sequences = [SEQUENCE] * len(completions)
    reward = KTCompressionReward(mode="python", timeout_s=1.0, workers=2)
    try:
        start = time.perf_counter()
        got = verdicts(reward, completions, sequences)
        elapsed = time.perf_counter() - start
        again = reward(completions=[correct], sequence=[SEQUENCE])  # the pool lives across calls
    finally:
        reward.close()
    assert elapsed < 20
    bits = 8 * len(gzip.compress(correct.encode(), compresslevel=9, mtime=0))
    expected = 0.5 + 0.5 * max(0.0, 1 - (1 + bits) / RAW_BITS)
    assert got[0] == (pytest.approx(expected), "correct") and got[-2] == got[0]
    assert again == [got[0][0]]
    hostile = dict(zip(HOSTILE, got[1:-2], strict=True))
    assert all(r == 0.0 for r, _ in got[1:-2]) and got[-1] == (0.0, "wrong_output")
    assert hostile["endless loop"][1] == "timeout"
    assert hostile["huge allocation"][1] == "memory"
    assert hostile["exit"][1] in {"killed", "no_output"} and hostile["system exit"][1] == "no_output"
    assert hostile["output too long"][1] == "wrong_output" and hostile["not a list"][1] == "bad_output"
    assert hostile["forged null report"][1] == hostile["forged length"][1] == "bad_output"
    assert hostile["fork bomb-lite"][1] in {"timeout", "killed", "runtime_error"}  # fork fails past 64 processes
    assert hostile["fork and spin"][1] in {"timeout", "killed"}
