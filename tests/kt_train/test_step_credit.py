"""Step credit for GRPO: returns, per-state baselines, and each token's advantage from its step."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from kt_train.rewards import Step, format_reward
from kt_train.training.step_credit import (
    step_advantages,
    step_returns,
    step_reward_of,
    token_advantages,
    token_starts,
)


def test_a_step_returns_its_reward_and_every_later_one() -> None:
    steps = [Step(3, "", "a", -0.1), Step(6, "a", "b", 0.4), Step(9, "ab", "c", 0.5)]
    assert step_returns(steps) == pytest.approx([0.8, 0.9, 0.5])


def test_credit_goes_to_where_the_group_chose_differently() -> None:
    right = [Step(5, "", "one\n", 0.1), Step(10, "one\n", "two\n", 0.5)]
    wrong = [Step(5, "", "one\n", 0.1), Step(10, "one\n", "tow\n", 0.0)]
    advantages = step_advantages([right, wrong], group_size=2)
    assert advantages[0][0] == advantages[1][0] == 0.0  # both wrote the same first line: nothing between them
    assert advantages[0][1] > 0 > advantages[1][1]
    assert advantages[0][1] == pytest.approx(-advantages[1][1])
    assert advantages[0][1] == pytest.approx(0.25 / 0.3535534, rel=1e-5)  # 0.25 over the std of (0.25, -0.25)


def test_positive_only_credit_leaves_the_worse_steps_alone() -> None:
    right = [Step(5, "", "one\n", 0.5)]
    wrong = [Step(5, "", "tow\n", 0.0)]
    both = step_advantages([right, wrong], group_size=2)
    positive = step_advantages([right, wrong], group_size=2, positive_only=True)
    assert both[0][0] > 0 > both[1][0]
    assert positive[0][0] > 0 and positive[1] == [0.0]


def test_a_state_one_sample_reached_and_other_groups_give_no_credit() -> None:
    first = [Step(5, "", "a", 0.3), Step(10, "a", "b", 0.2)]
    second = [Step(5, "", "x", 0.0)]
    third = [Step(5, "", "c", 0.7)]  # another prompt's group of one
    advantages = step_advantages([first, second, third, third], group_size=2)
    assert advantages[0][1] == 0.0  # state "a": only the first sample reached it
    assert advantages[0][0] > 0 > advantages[1][0]
    assert advantages[2] == advantages[3] == [0.0]  # the same step in the same state
    with pytest.raises(ValueError, match="groups of 2"):
        step_advantages([first, second, third], group_size=2)


def test_tokens_take_their_steps_advantage_and_none_after_the_last_step(tiny_model_dir: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    text = "x = 1\ny = 2\nz = 3\n"
    ids = [*tokenizer(text, add_special_tokens=False).input_ids, tokenizer.eos_token_id]
    starts = token_starts(tokenizer, ids)
    assert tokenizer.decode(ids[: len(starts)], skip_special_tokens=True) == text
    assert starts[-1] == len(text)  # the end-of-sequence token starts after the text
    steps = [Step(6, "", "x = 1\n", 1.0), Step(12, "x = 1\n", "y = 2\n", -1.0)]  # the second line failed
    values = token_advantages(steps, [1.0, -1.0], starts)
    for start, value in zip(starts, values, strict=True):
        assert value == (1.0 if start < 6 else -1.0 if start < 12 else 0.0)
    finished = [*steps[:1], Step(len(text) + 1, "x = 1\n", "y = 2\n", 0.5)]  # a last step that owns the EOS token
    assert token_advantages(finished, [1.0, 0.5], starts)[-1] == 0.5


def test_step_credit_needs_a_reward_with_steps() -> None:
    with pytest.raises(ValueError, match="credit_assignment step needs a reward"):
        step_reward_of([format_reward])
