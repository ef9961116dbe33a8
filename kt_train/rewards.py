"""Reward functions for GRPO in TRL's contract, and where to find them.

TRL's GRPOTrainer calls a reward as `f(prompts=..., completions=..., completion_ids=..., **columns)`, the dataset's
other columns, `trainer_state`, `log_metric` and `log_extra` among them, and wants one float per completion (open-r1's
`rewards.py` is the model). Every kt-train reward is a `Reward`: a callable object whose name ends in `_reward` (the
name TRL logs, `rewards/<name>/mean`). It:

- reads the completion texts (plain or chat messages) and the columns it needs (a missing column is a config error,
  raised at once, not a zero reward);
- scores them in one batch (`Reward.score`), each completion getting a reward and a verdict from a small closed set;
  a completion that cannot be scored (malformed, hostile, endless) gets `failure_reward` and its verdict, and if
  scoring the batch raises anyway, every completion gets `failure_reward` and one warning line: a reward never
  crashes a training run;
- returns None (`SKIPPED`: TRL ignores it) for rows it does not apply to, so that several rewards can share a mixed
  dataset;
- logs the share of each verdict among the rows it scored (`<name>/<verdict>`, through `log_metric`) and each
  completion's verdict (a column of the completions table, through `log_extra`).

Rewards that run model-written code or decode model-written data do it in a `SandboxPool` (`PooledReward`): every
completion is a sandbox job with its own CPU-time, wall-clock and memory limits, all of a batch run at once on the
pool's workers, so an endless or hostile completion costs at most its timeout.

Here: `format_reward` (the completion matches the row's `format_pattern`, a regex the data builder writes). The
domain rewards (KT compression, RTCE answer and round trip, NL round trip) score with the DSL, the RTCE algorithms
and the evaluation metrics, which this runtime never imports: they register under the `kt_train.rewards` entry-point
group (pyproject.toml) and are found by name, `get_reward("kt_compression", prior="gzip")` or, with default options,
`from kt_train.rewards import kt_compression_reward`.
"""

from __future__ import annotations

import atexit
import functools
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, Protocol, runtime_checkable

from kt_train.sandbox import DEFAULT_TIMEOUT_S, SandboxConfig, SandboxJob, SandboxPool, SandboxResult

ENTRY_POINT_GROUP = "kt_train.rewards"
SUFFIX = "_reward"
REWARD_ERROR = "reward_error"  # the verdict of every completion of a batch whose scoring raised
NOT_APPLICABLE = "not_applicable"  # TRL's None reward: this reward does not score this row (another one does)
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Scored:
    """One completion's reward and verdict (`ok`, or why it scored `failure_reward`, or what it was judged); a None
    reward (verdict `not_applicable`) tells TRL that this reward does not apply to the row."""

    reward: float | None
    verdict: str
    metrics: tuple[tuple[str, float], ...] = ()  # the task's own measures of this completion, logged as batch means


SKIPPED = Scored(None, NOT_APPLICABLE)


@dataclass(frozen=True)
class Step:
    """One verified step of a completion, for GRPO's step credit (`kt_train.training.step_credit`): where its text
    ends (a character offset in the completion; the last step of a finished completion may end past the text, so
    that the end-of-sequence token is its own), the text the completion wrote before it (its state), its own text
    (its action) and its reward. A completion's tokens after its last step's end get no policy gradient."""

    end: int
    state: str
    action: str
    reward: float


@runtime_checkable
class StepReward(Protocol):
    """A reward that can split completions into verified steps (`has_steps` False: not with these options)."""

    has_steps: bool

    def steps(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[list[Step]]: ...


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or chat messages (the last assistant turn's content, text parts joined)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        content = completion[-1].get("content", "")
        if isinstance(content, str):
            return content
        if isinstance(content, Sequence):
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


class Reward:
    """A reward in TRL's contract. Subclasses set `name`, `required_columns` and implement `score`."""

    name: ClassVar[str] = "reward"
    required_columns: ClassVar[tuple[str, ...]] = ()

    def __init__(self, failure_reward: float = 0.0) -> None:
        self.failure_reward = float(failure_reward)

    @property
    def __name__(self) -> str:  # TRL names a callable object by its __name__
        return self.name

    def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
        """One `Scored` per text; `columns` holds the dataset's columns, one value per text."""
        raise NotImplementedError

    def failed(self, verdict: str) -> Scored:
        """The score of a completion that could not be scored."""
        return Scored(self.failure_reward, verdict)

    def close(self) -> None:
        """Release what the reward holds (processes, models); it starts them again when called after."""

    def check_columns(self, column_names: Iterable[str]) -> None:
        """Raise ValueError (one line) when the dataset lacks a column this reward reads."""
        missing = sorted(set(self.required_columns) - set(column_names))
        if missing:
            raise ValueError(f"{self.name} needs the dataset column(s) {missing}")

    def __call__(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **kwargs: Any
    ) -> list[float | None]:
        log_metric: Callable[[str, float], None] | None = kwargs.pop("log_metric", None)
        log_extra: Callable[[str, list[Any]], None] | None = kwargs.pop("log_extra", None)
        columns = {k: v for k, v in kwargs.items() if isinstance(v, list) and len(v) == len(completions)}
        self.check_columns(columns)
        texts = [completion_text(c) for c in completions]
        try:
            scored = self.score(texts, columns)
            if len(scored) != len(texts):
                raise RuntimeError(f"{len(scored)} scores for {len(texts)} completions")
        except Exception as exc:  # last resort: the run goes on, the failure is visible in the verdict shares
            logger.warning(
                "%s: scoring failed (%s: %s); %d completions get %s",
                self.name,
                type(exc).__name__,
                exc,
                len(texts),
                self.failure_reward,
            )
            scored = [self.failed(REWARD_ERROR)] * len(texts)
        applicable = [s for s in scored if s.verdict != NOT_APPLICABLE]
        if log_metric is not None and applicable:
            for verdict, count in sorted(Counter(s.verdict for s in applicable).items()):
                log_metric(f"{self.name}/{verdict}", count / len(applicable))
            measured: dict[str, list[float]] = {}
            for s in applicable:
                for key, value in s.metrics:
                    measured.setdefault(key, []).append(value)
            for key, values in sorted(measured.items()):
                log_metric(f"{self.name}/{key}", sum(values) / len(values))
        if log_extra is not None:
            log_extra(f"{self.name}_verdict", [s.verdict for s in scored])
        return [s.reward for s in scored]


class PooledReward(Reward):
    """A reward that runs its jobs in a sandbox pool, started on first use and stopped by `close` (or at exit)."""

    preload: ClassVar[tuple[str, ...]] = ("json",)

    def __init__(
        self,
        failure_reward: float = 0.0,
        workers: int | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        memory_mb: int = 512,
    ) -> None:
        super().__init__(failure_reward)
        self.workers = workers
        self.sandbox = SandboxConfig(timeout_s=timeout_s, memory_mb=memory_mb)
        self._pool: SandboxPool | None = None

    def run_jobs(self, jobs: Sequence[SandboxJob]) -> list[SandboxResult]:
        """Run the jobs at once on the pool's workers; results in order, each with its sandbox verdict."""
        if not jobs:
            return []
        if self._pool is None:
            self._pool = SandboxPool(workers=self.workers, preload=self.preload, config=self.sandbox)
            atexit.register(self.close)
        return self._pool.map(jobs)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


class FormatReward(Reward):
    """1.0 when the stripped completion fully matches the row's `format_pattern` (a regex, DOTALL), else 0.0."""

    name = "format_reward"
    required_columns = ("format_pattern",)

    def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
        return [
            Scored(1.0, "ok") if _compiled(pattern).fullmatch(text.strip()) else Scored(0.0, "bad_format")
            for text, pattern in zip(texts, columns["format_pattern"], strict=True)
        ]


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.DOTALL)


format_reward = FormatReward()


# ----- finding rewards by name


def reward_registry() -> dict[str, EntryPoint]:
    """Reward name -> its entry point (pyproject.toml: `format` here, the domain rewards in eval/rewards)."""
    return {entry.name: entry for entry in entry_points(group=ENTRY_POINT_GROUP)}


def get_reward(name: str, **options: Any) -> Reward:
    """The reward `name` (with or without the `_reward` suffix) made with `options`; ValueError (one line) for an
    unknown name or option."""
    key = name.removesuffix(SUFFIX)
    registry = reward_registry()
    if key not in registry:
        raise ValueError(f"unknown reward {name!r}; known: {', '.join(sorted(registry))}")
    factory = registry[key].load()
    try:
        return factory(**options)
    except TypeError as exc:
        raise ValueError(f"reward {key!r}: {exc}") from exc


def get_reward_funcs(names: Sequence[str], options: Mapping[str, Mapping[str, Any]] | None = None) -> list[Reward]:
    """The rewards `names` for GRPOTrainer, each made with `options[name]` (keys: names with or without `_reward`)."""
    options = {k.removesuffix(SUFFIX): dict(v) for k, v in (options or {}).items()}
    unused = sorted(set(options) - {n.removesuffix(SUFFIX) for n in names})
    if unused:
        raise ValueError(f"reward_options for reward(s) not in reward_funcs: {', '.join(unused)}")
    return [get_reward(name, **options.get(name.removesuffix(SUFFIX), {})) for name in names]


@functools.cache
def _default_reward(key: str) -> Reward:
    return get_reward(key)


def __getattr__(attribute: str) -> Reward:
    """`kt_train.rewards.<name>_reward`: the registered reward `<name>` with its default options."""
    key = attribute.removesuffix(SUFFIX)
    if attribute.endswith(SUFFIX) and key in reward_registry():
        return _default_reward(key)
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


__all__ = [
    "ENTRY_POINT_GROUP",
    "NOT_APPLICABLE",
    "REWARD_ERROR",
    "SKIPPED",
    "FormatReward",
    "PooledReward",
    "Reward",
    "Scored",
    "Step",
    "StepReward",
    "completion_text",
    "format_reward",
    "get_reward",
    "get_reward_funcs",
    "reward_registry",
]
