"""The test tiers mean what they say: the fast tier builds no trainer (tests/conftest.py)."""

from __future__ import annotations

import pytest
import torch
from transformers import Trainer, TrainingArguments


def _build_trainer(tmp_path: object) -> Trainer:
    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to=[], max_steps=1)
    return Trainer(model=torch.nn.Linear(2, 2), args=args)


def test_a_trainer_built_outside_the_slow_tier_fails_the_test(tmp_path: object) -> None:
    with pytest.raises(AssertionError, match="mark the test `slow`"):
        _build_trainer(tmp_path)


@pytest.mark.slow
def test_the_slow_tier_builds_trainers(tmp_path: object) -> None:
    assert isinstance(_build_trainer(tmp_path), Trainer)
