"""Step credit for GRPO (`credit_assignment: step`): each token's advantage from the verified step it belongs to.

GRPO gives every token of a completion one advantage, the completion's reward against its group's mean. When a
reward can check a completion step by step (a KT segment program line by line: each line either extends what the
program wrote of the sequence or does not), most of that credit is misplaced: a program that goes wrong at its
twentieth line is pushed down for its nineteen right lines too, and the tokens after its first wrong line, which no
reward reads, get the same push. With steps:

- a completion is split into steps, each with the text of the steps before it (its *state*: the policy wrote the
  same tokens there) and a reward (a KT line: the bits it saved, its numbers' raw bits less its own cost, over the
  sequence's raw bits; the output line of a correct program adds a bonus); a step that fails verification ends the
  completion's steps with reward 0, and the tokens after it get no policy gradient;
- a step's return is the sum of its reward and the rewards of the steps after it (the bits the rest of the program
  saved); its advantage is Q - V: V the mean return of the group's steps in the same state (the group's samples of
  the same prompt that wrote the same text before it, itself included), a Monte-Carlo estimate of the state's value,
  and Q the mean return of those that also wrote the same step;
- advantages are divided by their standard deviation over the batch's steps that have one.

So credit goes where the group's samples chose differently: at the state where one sample wrote the right line and
another a wrong one, the right one is pushed up and the wrong one down; lines every sample of the state wrote alike
get nothing from each other, and a state only one sample reached gives no signal, as a group with one reward does in
GRPO. This is DeepSeekMath's process-supervised GRPO (the return of a step as the sum of its and later steps'
rewards) with the baseline of each step taken from the samples that share its state rather than from all steps.

A reward offers steps with a `steps(texts, columns)` method (`StepReward`); `StepCreditGRPOTrainer` uses the first
of its rewards that has one, replaces TRL's per-completion advantages by per-token ones during training (TRL's loss
takes advantages of shape (B, T)) and logs `step_credit/*`; evaluation keeps TRL's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from statistics import mean
from typing import Any

import torch
from accelerate.utils import gather_object
from trl import GRPOTrainer

from kt_train.rewards import Step, StepReward


def step_returns(steps: Sequence[Step]) -> list[float]:
    """Each step's return: its reward plus the rewards of the steps after it."""
    returns, total = [], 0.0
    for step in reversed(steps):
        total += step.reward
        returns.append(total)
    return returns[::-1]


def step_advantages(
    completions: Sequence[Sequence[Step]], group_size: int, positive_only: bool = False
) -> list[list[float]]:
    """Per completion, per step: Q - V, where V is the mean return of the steps in the step's state among its group
    (`group_size` consecutive completions of one prompt) and Q the mean return of those of them that took the same
    action (so samples that wrote the same step in the same state get the same advantage, and a state where all
    wrote the same gives none), divided by the standard deviation of the batch's nonzero advantages (1 when there
    are fewer than two). `positive_only`: steps worse than their state's mean get 0 (only the better ones are
    reinforced, as in rejection-sampling fine-tuning, at the states where the samples differ)."""
    if group_size < 1 or len(completions) % group_size:
        raise ValueError(f"{len(completions)} completions do not form groups of {group_size}")
    returns = [step_returns(steps) for steps in completions]
    advantages: list[list[float]] = []
    for first in range(0, len(completions), group_size):
        group = range(first, first + group_size)
        by_state: dict[str, list[float]] = defaultdict(list)
        by_action: dict[tuple[str, str], list[float]] = defaultdict(list)
        for index in group:
            for step, value in zip(completions[index], returns[index], strict=True):
                by_state[step.state].append(value)
                by_action[step.state, step.action].append(value)
        for index in group:
            advantage = [mean(by_action[s.state, s.action]) - mean(by_state[s.state]) for s in completions[index]]
            advantages.append([max(a, 0.0) for a in advantage] if positive_only else advantage)
    nonzero = torch.tensor([a for row in advantages for a in row if abs(a) > 1e-12], dtype=torch.float64)
    scale = float(nonzero.std()) if nonzero.numel() > 1 else 1.0
    scale = scale if scale > 1e-8 else 1.0
    return [[a / scale if abs(a) > 1e-12 else 0.0 for a in row] for row in advantages]


def token_starts(tokenizer: Any, ids: Sequence[int]) -> list[int]:
    """The character offset at which each token's text starts in the completion's decoded text (special tokens
    skipped, as TRL decodes completions for rewards): decoded one token at a time when that gives the same text,
    else prefix by prefix."""
    pieces = [tokenizer.decode([i], skip_special_tokens=True) for i in ids]
    if "".join(pieces) != tokenizer.decode(list(ids), skip_special_tokens=True):
        pieces = []
        previous = ""
        for end in range(1, len(ids) + 1):
            text = tokenizer.decode(list(ids[:end]), skip_special_tokens=True)
            pieces.append(text[len(previous) :])
            previous = text
    starts, offset = [], 0
    for piece in pieces:
        starts.append(offset)
        offset += len(piece)
    return starts


def token_advantages(steps: Sequence[Step], advantages: Sequence[float], starts: Sequence[int]) -> list[float]:
    """Per token (by its start offset), the advantage of the step it belongs to: the first step whose end is past
    the token's start; 0 for tokens after the last step."""
    out, index = [], 0
    for start in starts:
        while index < len(steps) and start >= steps[index].end:
            index += 1
        out.append(advantages[index] if index < len(steps) else 0.0)
    return out


def step_reward_of(reward_funcs: Sequence[Any]) -> StepReward:
    """The first reward that offers steps; ValueError (one line) when none does."""
    for reward in reward_funcs:
        if isinstance(reward, StepReward) and reward.has_steps:
            return reward
    names = ", ".join(getattr(r, "name", type(r).__name__) for r in reward_funcs)
    raise ValueError(f"credit_assignment step needs a reward that splits completions into steps; none of {names} does")


class StepCreditGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer with per-token advantages from verified steps during training (module docstring)."""

    def __init__(self, *args: Any, positive_only: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.step_reward = step_reward_of(self.reward_funcs)
        self.positive_only = positive_only

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        if not self.model.training:
            return output
        ids, mask = output["completion_ids"], output["completion_mask"]
        rows = [row[: int(n)].tolist() for row, n in zip(ids, mask.sum(dim=1), strict=True)]
        texts = self.processing_class.batch_decode(rows, skip_special_tokens=True)
        columns = {key: [row[key] for row in inputs] for key in inputs[0] if key != "prompt"}
        local_steps = self.step_reward.steps(texts, columns)
        all_steps = gather_object(local_steps)
        advantages = step_advantages(all_steps, self.num_generations, self.positive_only)
        first = self.accelerator.process_index * len(inputs)
        per_token = torch.zeros(ids.shape, dtype=torch.float32, device=ids.device)
        for row, (tokens, steps) in enumerate(zip(rows, local_steps, strict=True)):
            values = token_advantages(steps, advantages[first + row], token_starts(self.processing_class, tokens))
            per_token[row, : len(values)] = torch.tensor(values, dtype=torch.float32)
        output["advantages"] = per_token
        self.log_step_credit(all_steps, advantages, mask, per_token)
        return output

    def log_step_credit(
        self, steps: list[list[Step]], advantages: list[list[float]], mask: torch.Tensor, per_token: torch.Tensor
    ) -> None:
        """Steps per completion, the share of steps with a nonzero advantage (the group's samples chose differently
        there) and the share of this process's completion tokens that get a policy gradient."""
        metrics = self._metrics["train"]
        metrics["step_credit/steps"].append(sum(map(len, steps)) / max(len(steps), 1))
        flat = [a for row in advantages for a in row]
        metrics["step_credit/credited_steps"].append(sum(a != 0.0 for a in flat) / max(len(flat), 1))
        tokens = float(mask.sum())
        metrics["step_credit/credited_tokens"].append(float(((per_token != 0) & mask.bool()).sum()) / max(tokens, 1))


__all__ = [
    "StepCreditGRPOTrainer",
    "step_advantages",
    "step_returns",
    "step_reward_of",
    "token_advantages",
    "token_starts",
]
