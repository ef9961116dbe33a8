"""`nl_roundtrip_reward`: the policy is the generator of the NL round trip (NL paper §2.2). Its word problem w for
the row's expression e is cleaned and guarded (`eval.nl.guard`); an extractor reads e^ from w alone, and the
oracle (`eval.nl.oracle.judge`) decides whether e^ is equivalent to e.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from dsl.expr.domains import get_domain
from dsl.expr.procedural import parse_procedure
from dsl.expr.prompts import ANSWER_PREFIX, extractor_prompt
from dsl.expr.serialize import parse_sexpr, to_infix, to_sexpr
from dsl.expr.tree import Node
from eval.nl.guard import GuardConfig, check_word_problem, clean_word_problem
from eval.nl.models import Participant, parse_participant
from eval.nl.oracle import ORACLE_DOMAINS, judge
from kt_train.generation import GenerationBackend, SamplingConfig
from kt_train.rewards import Reward, Scored

PARSER = "parser"


def procedural_extract(word_problem: str, domain: str) -> str | None:
    """The `parser` extractor of the reward: the exact reader of the procedural word problems
    (`dsl.expr.procedural`), answering `Expression: <e^>`, or None when the text is not one.

    Unlike `eval.nl.models.parser_extract` it never reads notation (S-expression, JSON-AST, infix): a JSON-AST
    written with placeholders passes the guard, and reading it would reward a policy for leaking the expression.
    """
    try:
        node = parse_procedure(word_problem.strip(), domain)
    except (ValueError, KeyError, TypeError):
        return None
    text = to_sexpr(node) if domain == "assembly" else to_infix(node, get_domain(domain).syntax)
    return f"{ANSWER_PREFIX} {text}"


@functools.lru_cache(maxsize=4096)
def _target(expression: str) -> Node:
    return parse_sexpr(expression)


def guard_variables(node: Node, domain: str) -> list[str]:
    """The variables whose `{X}` placeholders the word problem must hold (assembly parts have none)."""
    return [] if domain == "assembly" else node.variables()


class NLRoundTripReward(Reward):
    """1.0 when an extractor recovers the row's `expression` (S-expression) from the completion's word problem, in the
    row's `domain` (arithmetic, logic or assembly); else `failure_reward`.

    Options:
    - `extractor`: "parser" (the exact procedural reader, `procedural_extract`) or a language model as
      `MODEL[@ADAPTER]` (embedded name, local path or hub id, with a LoRA adapter folder; as `kt nl run`
      participants), loaded once, on first use, through `kt_train.generation`, answering greedily with thinking
      off;
    - `shots`: exemplars in the extractor prompt (0..3; `kt nl run` uses 3); `max_new_tokens` of an extraction;
      `batch_size` and `device` of the model extractor;
    - `strict_guard`: the strict leakage guard (also `A - B`, digit-adjacent parentheses, = ^ × ÷);
    - `failure_reward`.

    Verdicts: the guard's (`no_output`, `leak`, `paren_leak`, `missing_placeholder`, `degenerate`), then
    `no_expression` (the extractor found or wrote no expression that parses), `wrong`, `correct`; `bad_row` for a row
    whose expression or domain cannot be read.
    """

    name = "nl_roundtrip_reward"
    required_columns = ("expression", "domain")

    def __init__(
        self,
        extractor: str = PARSER,
        shots: int = 3,
        max_new_tokens: int = 128,
        strict_guard: bool = False,
        batch_size: int = 8,
        device: str = "cpu",
        failure_reward: float = 0.0,
    ) -> None:
        super().__init__(failure_reward)
        if not 0 <= shots <= 3:
            raise ValueError(f"shots must be in 0..3, got {shots}")
        if max_new_tokens < 1 or batch_size < 1:
            raise ValueError(f"max_new_tokens and batch_size must be >= 1, got {max_new_tokens} and {batch_size}")
        try:
            self.participant: Participant = parse_participant(extractor, "extractor")
        except FileNotFoundError as exc:
            raise ValueError(str(exc)) from exc
        if self.participant.kind not in ("parser", "lm"):
            raise ValueError(f"extractor must be 'parser' or MODEL[@ADAPTER], got {extractor!r}")
        self.shots, self.strict_guard = shots, bool(strict_guard)
        self.guard = GuardConfig(strict=self.strict_guard)
        self.sampling = SamplingConfig(temperature=0.0, max_new_tokens=max_new_tokens, n=1)
        self.batch_size, self.device = batch_size, device
        self._backend: GenerationBackend | None = None

    def backend(self) -> GenerationBackend:
        """The model extractor's backend, loaded on first use."""
        if self._backend is None:
            from kt_train.generation import get_backend

            model = self.participant.model
            assert model is not None  # an `lm` participant names its model
            self._backend = get_backend(
                "transformers",
                model,
                adapter=self.participant.adapter,
                dtype="float32",
                device=self.device,
                batch_size=self.batch_size,
                chat_template_kwargs={"enable_thinking": False},
            )
        return self._backend

    def close(self) -> None:
        """Drop the model extractor (loaded again on the next use)."""
        self._backend = None

    def extract(self, items: list[tuple[str, str]]) -> dict[tuple[str, str], str | None]:
        """The extractor's completion for each distinct (word problem, domain)."""
        distinct = list(dict.fromkeys(items))
        if self.participant.kind == PARSER:
            return {(w, d): procedural_extract(w, d) for w, d in distinct}
        prompts = [extractor_prompt(w, d, self.shots if d != "assembly" else 0) for w, d in distinct]
        outputs = self.backend().generate(prompts, self.sampling)
        return {key: out[0] if out else None for key, out in zip(distinct, outputs, strict=True)}

    def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
        scored: list[Scored | None] = [None] * len(texts)
        todo: list[tuple[int, str, str, Node]] = []  # (index, word problem, domain, target)
        for i, (text, expression, domain) in enumerate(zip(texts, columns["expression"], columns["domain"])):
            try:
                if domain not in ORACLE_DOMAINS:
                    raise ValueError(f"unknown domain {domain!r}")
                target = _target(str(expression))
            except (ValueError, RecursionError):
                scored[i] = self.failed("bad_row")
                continue
            word_problem = clean_word_problem(text)
            guard = check_word_problem(word_problem, guard_variables(target, domain), self.guard)
            if not guard.passed:
                scored[i] = self.failed(guard.verdict)
                continue
            todo.append((i, word_problem, domain, target))
        answers = self.extract([(w, d) for _, w, d, _ in todo])
        for i, word_problem, domain, target in todo:
            judgement = judge(answers[word_problem, domain], target, domain)
            if judgement.correct:
                scored[i] = Scored(1.0, "correct")
            else:
                scored[i] = self.failed("wrong" if judgement.verdict == "wrong" else "no_expression")
        return [s if s is not None else self.failed("no_expression") for s in scored]


__all__ = ["NLRoundTripReward", "guard_variables", "procedural_extract"]
