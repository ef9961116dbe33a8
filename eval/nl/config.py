"""The options of one NL round-trip run (`kt nl run`): a light module, so building the `kt` parser imports no sympy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kt_train.generation import BackendOptions, SamplingConfig

if TYPE_CHECKING:
    from eval.nl.models import Participant


@dataclass
class NLRunConfig(BackendOptions):
    """One run of the round-trip protocol."""

    suite: str = field(metadata={"help": "suite folder (`kt nl suite`)", "metavar": "DIR"})
    output: str = field(
        metadata={"help": "folder for word problems, extractions, results and the report", "metavar": "DIR"}
    )
    generators: list[str] = field(
        metadata={"help": "generator specs: [LABEL=]MODEL[@ADAPTER], sexpr, json, procedural", "metavar": "SPEC"}
    )
    extractors: list[str] = field(
        metadata={"help": "extractor specs: [LABEL=]MODEL[@ADAPTER], parser", "metavar": "SPEC"}
    )
    generator_shots: int = field(default=0, metadata={"help": "gamma: exemplars in the generator prompt (0..3)"})
    extractor_shots: int = field(default=3, metadata={"help": "epsilon: exemplars in the extractor prompt (0..3)"})
    max_expressions: int | None = field(
        default=None, metadata={"help": "evaluate a seeded subset of this many expressions, spread over the cells"}
    )
    generator_tokens: int = field(default=256, metadata={"help": "most new tokens of a word problem"})
    extractor_tokens: int = field(default=128, metadata={"help": "most new tokens of an extraction"})
    strict_guard: bool = field(default=False, metadata={"help": "also catch 'A - B' and digit-adjacent parentheses"})
    thinking: bool = field(
        default=False, metadata={"help": "let reasoning models think (chat template enable_thinking; the paper: off)"}
    )
    batch_size: int = field(default=8, metadata={"help": "prompts per generation batch (and per resume step)"})
    judge_workers: int = field(default=1, metadata={"help": "processes judging answers with sympy"})
    seed: int = field(default=42, metadata={"help": "seed of the subset, the templates and the classifier"})
    panels: dict[str, list[str]] = field(
        default_factory=dict,
        metadata={
            "help": "a named extractor sub-panel for the attribution sensitivity table (repeatable)",
            "metavar": "NAME=E1,E2",
            "aliases": ["--panel"],
        },
    )
    wandb_project: str | None = field(default=None, metadata={"help": "log the report to this W&B project"})
    wandb_group: str | None = field(
        default=None, metadata={"help": "the W&B group of that run (a training's evaluations log in its group)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.generators or not self.extractors:
            raise ValueError("give at least one --generators and one --extractors")
        for name in ("generator_shots", "extractor_shots"):
            if not 0 <= getattr(self, name) <= 3:
                raise ValueError(f"{name} must be in 0..3, got {getattr(self, name)}")
        if self.max_expressions is not None and self.max_expressions < 1:
            raise ValueError(f"max_expressions must be >= 1, got {self.max_expressions}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")

    def participants(self) -> tuple[list[Participant], list[Participant]]:
        from eval.nl.models import parse_participant

        generators = [parse_participant(spec, "generator") for spec in self.generators]
        extractors = [parse_participant(spec, "extractor") for spec in self.extractors]
        for role, group in (("generator", generators), ("extractor", extractors)):
            labels = [p.label for p in group]
            if len(set(labels)) != len(labels):
                raise ValueError(f"two {role}s share a label in {labels}; name them LABEL=MODEL")
        for participant in (*generators, *extractors):
            self.check_model(participant.model)
            self.check_adapter(participant.adapter)
        return generators, extractors

    def sampling(self, max_new_tokens: int) -> SamplingConfig:
        """Greedy decoding (the paper: temperature 0, thinking disabled)."""
        return SamplingConfig(temperature=0.0, max_new_tokens=max_new_tokens, n=1, seed=self.seed)


__all__ = ["NLRunConfig"]
