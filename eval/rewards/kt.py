"""`kt_compression_reward`: a program that reproduces the row's sequence earns more the shorter it is (KT paper §7).

The program is found and checked exactly as `kt eval kt` does (`eval.kt.completions.extract_code`,
`eval.kt.checking.CandidateChecker`) and its CompressionRate is the evaluation's (`eval.kt.scoring`):
CR = (1 + ||p||) / ||x||, with ||x|| = symbol_bits * len(x).
"""

from __future__ import annotations

import atexit
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

from dsl.bits import NUMBER_RANGE
from eval.kt.checking import CandidateChecker, CheckConfig, CheckResult, Mode, Verdict
from eval.kt.completions import extract_code
from eval.kt.scoring import ProgramPrior, encoded_program_bits
from kt_train.rewards import Reward, Scored

Shaping = Literal["linear", "compression", "binary"]
SHAPINGS = ("linear", "compression", "binary")
SYNTHETIC_SYMBOL_BITS = 8  # what the KT evaluation charges per symbol of a synthetic sequence (eval.kt.dataset)


def clip01(value: float) -> float:
    return min(1.0, max(0.0, value))


def batch_measures(check: CheckResult, compression_rate: float) -> tuple[tuple[str, float], ...]:
    """What `kt_compression_reward/<name>` logs as batch means: accuracy, CompressionRate (as `kt eval kt` scores a
    sample) and `hack_rate`, the share whose verdict shows gaming (resource, unencodable, a forged report)."""
    correct = float(check.verdict == Verdict.CORRECT)
    return ("accuracy", correct), ("compression_rate", compression_rate), ("hack_rate", float(check.gaming))


class KTCompressionReward(Reward):
    """Reward a completion whose program outputs exactly the row's `sequence` (list of ints); else `failure_reward`.

    Options:
    - `mode`: "dsl" (SeqCoder output: parsed and run by the DSL interpreter) or "python" (run in the sandbox);
    - `prior`: program bits under the "uniform" DSL prior (dsl.bits; DSL mode only) or "gzip" (gzipped program
      text); None: uniform for DSL, gzip for Python (as `kt eval kt`);
    - `symbol_bits`: raw bits per symbol, ||x|| = symbol_bits * len(x) (8: the evaluation's synthetic data);
    - `shaping` of a correct program: "linear" `correct_bonus + (1 - correct_bonus) * clip(1 - CR, 0, 1)`,
      "compression" `clip(1 - CR, 0, 1)` or "binary" 1;
    - `correct_bonus` (linear shaping): what any correct program earns, however long;
    - `timeout_s`, `memory_mb`, `workers` (None: one per core): sandbox limits (Python mode);
    - `failure_reward`: the reward of a missing, failing or wrong program.

    Verdicts: those of `eval.kt.checking.Verdict` (`correct`, `wrong_output`, `no_code`, `syntax_error`,
    `runtime_error`, `timeout`, `memory`, `killed`, `no_output`, `bad_output`, `no_completion` for a blank text), and
    `no_sequence` for a row whose sequence is empty or not a list.
    """

    name = "kt_compression_reward"
    required_columns = ("sequence",)

    def __init__(
        self,
        mode: Mode = "dsl",
        prior: ProgramPrior | None = None,
        symbol_bits: int = SYNTHETIC_SYMBOL_BITS,
        shaping: Shaping = "linear",
        correct_bonus: float = 0.5,
        timeout_s: float = 5.0,
        memory_mb: int = 512,
        workers: int | None = None,
        failure_reward: float = 0.0,
    ) -> None:
        super().__init__(failure_reward)
        prior = prior or ("uniform" if mode == "dsl" else "gzip")
        if mode not in ("dsl", "python"):
            raise ValueError(f"mode must be 'dsl' or 'python', got {mode!r}")
        if prior not in ("uniform", "gzip"):
            raise ValueError(f"prior must be 'uniform' or 'gzip', got {prior!r}")
        if prior == "uniform" and mode != "dsl":
            raise ValueError("prior 'uniform' measures DSL programs: use it with mode 'dsl' (Python: 'gzip')")
        if shaping not in SHAPINGS:
            raise ValueError(f"shaping must be one of {', '.join(SHAPINGS)}, got {shaping!r}")
        if not 0.0 <= correct_bonus <= 1.0:
            raise ValueError(f"correct_bonus must be in [0, 1], got {correct_bonus}")
        if symbol_bits < 1:
            raise ValueError(f"symbol_bits must be >= 1, got {symbol_bits}")
        self.mode, self.prior, self.symbol_bits = mode, prior, int(symbol_bits)
        self.shaping, self.correct_bonus = shaping, float(correct_bonus)
        uniform_range = NUMBER_RANGE if prior == "uniform" else None  # literals it cannot encode: `unencodable`
        config = CheckConfig(timeout_s, memory_mb, workers, uniform_prior_range=uniform_range)
        self.checker = CandidateChecker(mode, config)
        if mode == "python":
            atexit.register(self.close)

    def shaped(self, compression_rate: float) -> float:
        """The reward of a correct program with this CompressionRate."""
        gain = clip01(1.0 - compression_rate)
        if self.shaping == "binary":
            return 1.0
        if self.shaping == "compression":
            return gain
        return self.correct_bonus + (1.0 - self.correct_bonus) * gain

    def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
        sequences = [[int(v) for v in seq] if isinstance(seq, list | tuple) else [] for seq in columns["sequence"]]
        programs = [extract_code(text) for text in texts]
        checks = self.checker.check(programs, sequences)
        scored = []
        for text, program, sequence, check in zip(texts, programs, sequences, checks, strict=True):
            if not text.strip():
                check = CheckResult(Verdict.NO_COMPLETION)
            if not sequence:  # a broken row: nothing to compress
                scored.append(self.failed("no_sequence"))
                continue
            raw_bits = self.symbol_bits * len(sequence)
            if check.verdict != Verdict.CORRECT:  # the evaluation's CompressionRate of a miss: the raw sequence
                measures = batch_measures(check, (1 + raw_bits) / raw_bits)
                scored.append(replace(self.failed(str(check.verdict)), metrics=measures))
                continue
            bits = encoded_program_bits(program, self.prior)  # a correct program is parseable: it has a length
            compression_rate = (1 + bits) / raw_bits
            measures = batch_measures(check, compression_rate)
            scored.append(Scored(self.shaped(compression_rate), str(check.verdict), metrics=measures))
        return scored

    def close(self) -> None:
        """Stop the sandbox pools (Python mode); a later call starts them again."""
        self.checker.close()


__all__ = ["SHAPINGS", "KTCompressionReward", "batch_measures"]
