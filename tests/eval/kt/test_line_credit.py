"""A KT completion's program lines as verified steps: bits saved per line, the first failing line last."""

from __future__ import annotations

import pytest

from dsl.bits import program_bits
from dsl.segments import segment_program
from eval.kt.line_credit import line_steps
from eval.rewards.kt import KTCompressionReward
from tests.eval.kt.test_dsl_limits import BIG_MODULUS, SCAN_ADD_CHAIN, WIDE_READS
from tests.kt_templates import crt_template

SEQUENCE = [238, 186, 0, 115, 120, 125, 130, 135, 140, 6, 6, 6, 6, 6, 6]


def test_a_correct_programs_steps_add_up_to_its_compression_and_the_bonus() -> None:
    program = segment_program(SEQUENCE) + "\n"
    steps = line_steps(program, SEQUENCE, symbol_bits=8, correct_bonus=0.5)
    assert [s.action for s in steps] == program.splitlines(keepends=True)
    assert steps[-1].end == len(program) + 1  # the output line owns the end-of-sequence token
    assert steps[1].state == program.splitlines(keepends=True)[0]
    raw = 8 * len(SEQUENCE)
    assert sum(s.reward for s in steps) == pytest.approx((raw - program_bits(program)) / raw + 0.5)


def test_the_first_failing_line_ends_the_steps_with_nothing() -> None:
    program = segment_program(SEQUENCE) + "\n"
    wrong = program.replace("repeat_num(6, 6)", "repeat_num(6, 7)")
    steps = line_steps(wrong + "junk that is never read\n", SEQUENCE, 8, 0.5)
    assert steps[-1].action == "sequence_4 = repeat_num(6, 7)\n" and steps[-1].reward == 0.0
    assert steps[-1].end == wrong.index("sequence_5")  # later tokens get no credit
    stopped = line_steps(program.split("sequence_4")[0], SEQUENCE, 8, 0.5)
    assert stopped[-1].action == "" and stopped[-1].reward == 0.0  # stopped before the output line


UNENCODABLE = "sequence_1 = set_list([238, 186, 100000])\n"


@pytest.mark.parametrize("line", [UNENCODABLE, "sequence_1 = nonsense(\n", "prose\n"])
def test_unencodable_unparseable_or_prose_lines_fail(line: str) -> None:
    steps = line_steps(line + "output = sequence_1\n", SEQUENCE, 8, 0.5)
    assert len(steps) == 1 and steps[0].reward == 0.0 and steps[0].state == ""


def test_the_reward_offers_steps_only_for_uniform_priced_dsl() -> None:
    reward = KTCompressionReward(shaping="compression")
    assert reward.has_steps
    program = segment_program(SEQUENCE)
    (steps,) = reward.steps([program], {"sequence": [SEQUENCE]})
    assert steps[-1].reward < 0.5  # compression shaping: no correct bonus
    assert not KTCompressionReward(prior="gzip").has_steps
    with pytest.raises(ValueError, match="uniform prior"):
        KTCompressionReward(prior="gzip").steps([program], {"sequence": [SEQUENCE]})


def test_gaming_and_costly_programs_earn_no_step_credit() -> None:
    """The Chinese-remainder template, a 4 KB `scan_add` chain and thousand-digit moduli, written as completions:
    their first line fails its check (an unencodable literal, or values that are not the sequence's), so no step
    returns anything and nothing after it is credited."""
    sequence = [7, 1, 200, 3, 9, 9, 0, 255, 4]
    for program in (crt_template(sequence), SCAN_ADD_CHAIN, BIG_MODULUS, WIDE_READS):
        steps = line_steps(program + "\n", sequence, 8, 0.5)
        assert len(steps) == 1 and steps[0].reward == 0.0 and steps[0].end <= program.index("\n") + 1
