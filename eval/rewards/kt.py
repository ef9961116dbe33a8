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
from eval.kt.line_credit import line_steps
from eval.kt.literal_tail import LITERAL_TAIL, literal_tail_program
from eval.kt.scoring import ProgramPrior, encoded_program_bits
from kt_train.rewards import Reward, Scored, Step
from kt_train.sandbox import DEFAULT_TIMEOUT_S

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


def row_sequences(columns: Mapping[str, list[Any]]) -> list[list[int]]:
    """The rows' `sequence` column as lists of ints (a row whose value is not a list: empty)."""
    return [[int(v) for v in seq] if isinstance(seq, list | tuple) else [] for seq in columns["sequence"]]


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
    - `failure_reward`: the reward of a missing, failing or wrong program;
    - `literal_tail` (DSL mode, uniform prior): a wrong program whose lines wrote a prefix of the sequence left to
      right is scored as `kt eval kt --literal-tail` scores it: cut there and finished with the rest as a literal
      (`eval.kt.literal_tail`), its verdict `literal_tail` and its reward the shaping of its CompressionRate without
      the correct bonus (so a program that writes more of the sequence in fewer bits earns more, and none earns
      what a correct one does).

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
        timeout_s: float = DEFAULT_TIMEOUT_S,
        memory_mb: int = 512,
        workers: int | None = None,
        failure_reward: float = 0.0,
        literal_tail: bool = False,
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
        if literal_tail and prior != "uniform":
            raise ValueError(
                "literal_tail finishes DSL programs priced by the uniform prior: mode 'dsl', prior 'uniform'"
            )
        self.literal_tail = literal_tail
        self.mode, self.prior, self.symbol_bits = mode, prior, int(symbol_bits)
        self.shaping, self.correct_bonus = shaping, float(correct_bonus)
        uniform_range = NUMBER_RANGE if prior == "uniform" else None  # literals it cannot encode: `unencodable`
        config = CheckConfig(timeout_s, memory_mb, workers, uniform_prior_range=uniform_range)
        self.checker = CandidateChecker(mode, config)
        if mode == "python":
            atexit.register(self.close)

    def shaped(self, compression_rate: float, bonus: bool = True) -> float:
        """The reward of a correct program with this CompressionRate (`bonus`: the model's own, not a literal
        tail's)."""
        gain = clip01(1.0 - compression_rate)
        if self.shaping == "binary":
            return 1.0 if bonus else 0.0
        if self.shaping == "compression":
            return gain
        return (self.correct_bonus if bonus else 0.0) + (1.0 - self.correct_bonus) * gain

    def tails(
        self, programs: list[str | None], sequences: list[list[int]], checks: list[CheckResult]
    ) -> list[str | None]:
        """Per completion, the literal-tail program of a wrong one when it is correct (checked like any), or None."""
        found: list[tuple[int, str]] = []
        for index, (program, sequence, check) in enumerate(zip(programs, sequences, checks, strict=True)):
            if self.literal_tail and sequence and check.verdict != Verdict.CORRECT:
                tailed = literal_tail_program(program, sequence, self.symbol_bits * len(sequence))
                if tailed is not None:
                    found.append((index, tailed.text))
        out: list[str | None] = [None] * len(programs)
        tail_checks = self.checker.check([t for _, t in found], [sequences[i] for i, _ in found]) if found else []
        for (index, text), check in zip(found, tail_checks, strict=True):
            out[index] = text if check.verdict == Verdict.CORRECT else None
        return out

    def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
        sequences = row_sequences(columns)
        programs = [extract_code(text) for text in texts]
        checks = self.checker.check(programs, sequences)
        tails = self.tails(programs, sequences, checks)
        scored = []
        for text, program, sequence, check, tail in zip(texts, programs, sequences, checks, tails, strict=True):
            if not text.strip():
                check, tail = CheckResult(Verdict.NO_COMPLETION), None
            if not sequence:  # a broken row: nothing to compress
                scored.append(self.failed("no_sequence"))
                continue
            raw_bits = self.symbol_bits * len(sequence)
            if tail is not None:  # scored as `kt eval kt --literal-tail` scores it
                compression_rate = (1 + encoded_program_bits(tail, self.prior)) / raw_bits
                measures = batch_measures(check, compression_rate)
                scored.append(Scored(self.shaped(compression_rate, bonus=False), LITERAL_TAIL, metrics=measures))
                continue
            if check.verdict != Verdict.CORRECT:  # the evaluation's CompressionRate of a miss: the raw sequence
                measures = batch_measures(check, (1 + raw_bits) / raw_bits)
                scored.append(replace(self.failed(str(check.verdict)), metrics=measures))
                continue
            bits = encoded_program_bits(program, self.prior)  # a correct program is parseable: it has a length
            compression_rate = (1 + bits) / raw_bits
            measures = batch_measures(check, compression_rate)
            scored.append(Scored(self.shaped(compression_rate), str(check.verdict), metrics=measures))
        return scored

    @property
    def has_steps(self) -> bool:
        """Steps for GRPO's step credit: DSL programs under the uniform prior, read line by line."""
        return self.mode == "dsl" and self.prior == "uniform"

    def steps(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[list[Step]]:
        """Each completion's program lines as verified steps (`eval.kt.line_credit`), the output line of a correct
        program earning `correct_bonus` (0 with `compression` shaping)."""
        if not self.has_steps:
            raise ValueError("steps read DSL programs priced by the uniform prior: mode 'dsl', prior 'uniform'")
        bonus = 0.0 if self.shaping == "compression" else self.correct_bonus
        sequences = row_sequences(columns)
        return [line_steps(text, seq, self.symbol_bits, bonus) for text, seq in zip(texts, sequences, strict=True)]

    def close(self) -> None:
        """Stop the sandbox pools (Python mode); a later call starts them again."""
        self.checker.close()


__all__ = ["SHAPINGS", "KTCompressionReward", "batch_measures"]
