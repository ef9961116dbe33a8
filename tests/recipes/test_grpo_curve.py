"""recipes/tools/grpo_curve.py: block means of a GRPO run's logged measures, its held-out evaluations, a PNG."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_recipe_configs import load_recipe


def test_block_means_and_held_out_evaluations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = [{"step": s, "reward": s / 10, "kt_compression_reward/accuracy": 0.1 * (s > 2)} for s in (1, 2, 3, 4)]
    history += [{"step": s, "eval_kt_compression_reward/accuracy": a} for s, a in ((0, 0.25), (4, 0.5))]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    tool = load_recipe("tools/grpo_curve")
    assert tool.main(["--run", str(tmp_path), "--block", "2"]) == 0
    out = capsys.readouterr().out
    assert "| steps | 1-2 | 3-4 |" in out
    assert "| reward (all rewards, weighted) | 0.150 | 0.350 |" in out
    assert "| accuracy of the samples | 0.000 | 0.100 |" in out
    assert "held-out accuracy at steps 0, 4: 0.250, 0.500" in out
    assert (tmp_path / "grpo_curve.png").stat().st_size > 0
    assert tool.main(["--run", str(tmp_path / "missing")]) == 2
