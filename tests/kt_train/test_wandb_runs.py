"""The evaluations' W&B helper loads W&B only: not TRL, PEFT or transformers (25-40 s per evaluation before)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_the_evaluations_wandb_helper_loads_no_training_stack() -> None:
    code = (
        "import json, sys, wandb\n"
        "from kt_train.wandb_runs import finish_wandb, logged_in, start_wandb_run\n"
        "import eval.kt.report, eval.nl.report, eval.rtce.report\n"
        "print(json.dumps(sorted({'trl', 'peft', 'transformers'} & set(sys.modules))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == []
