"""The symbolic-equivalence oracle of the NL round trip (NL paper §2.2, App. M "Computing extractor votes").

`extract_expression` finds the answer in an extractor completion; `judge` parses it with the project's own parsers
(never ``eval``/``sympify`` on model text) and compares it with the target expression:

- arithmetic: infix (`ARITHMETIC` syntax), else the notations SymPy's parser reads (``D**2``, ``D^2``, ``D²``,
  ``AB^2``: `eval.nl.sympy_notation`, integer powers written out as products), to sympy; correct iff ``e_hat - e`` is
  zero. The paper tests ``sympy.simplify(e_hat - e) == 0``; for rational functions (all these notations can express)
  ``cancel(together(.))`` is an exact zero test with the same answer and much faster, so it decides, and
  ``simplify`` is only the fallback for anything else. An answer that divides by zero (``zoo``/``nan`` in sympy) is
  wrong. Canonical form: ``srepr(cancel(together(e_hat)))``, equal exactly for equal rational functions;
- logic: infix (`LOGIC_SYNTAX`); correct iff `logic_equivalent`; canonical form `logic_canonical` (the variables
  the formula depends on and its truth table over them);
- assembly: an S-expression; correct iff `assembly_equivalent`; canonical form `assembly.canonical`.

Two predictions are "the same" (extractor votes, App. M) iff their canonical strings are equal; unparsable ones have
none. Parsing and canonical forms are cached per (domain, extracted text), and equivalence per (domain, text,
target), so N extractors agreeing on one text cost one simplification.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sympy

from dsl.expr.arithmetic import to_sympy
from dsl.expr.assembly import assembly_equivalent
from dsl.expr.assembly import canonical as assembly_canonical
from dsl.expr.domains import get_domain
from dsl.expr.logic import logic_canonical, logic_equivalent
from dsl.expr.prompts import VARIABLE_NAME
from dsl.expr.serialize import parse_infix, parse_sexpr
from dsl.expr.tree import Node
from eval.nl.sympy_notation import parse_sympy_notation

VERDICTS = ("correct", "wrong", "parse_error", "no_output")
ORACLE_DOMAINS = ("arithmetic", "logic", "assembly")
MAX_ANSWER_CHARS = 1000
MAX_ANSWER_OPERATORS = 64

_LABEL_LINE = re.compile(r"^[ \t>#*_\-]*expression[ \t*_]*:[ \t*_]*(?P<rest>.*)$", re.IGNORECASE)
_FENCE_BLOCK = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_FENCE_LINE = re.compile(r"^\s*(?:```|~~~)\S*\s*$")
_LATEX = (("\\times", "*"), ("\\cdot", "*"), ("\\div", "/"), ("\\left", ""), ("\\right", ""))
_LATEX_BRACKET = re.compile(r"\\([()\[\]])")
_PLACEHOLDER = re.compile(rf"\{{\s*({VARIABLE_NAME})\s*\}}")  # {A}, tolerating spaces
_LEADING_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_ ]*?\s*=(?![=>])\s*")
_TRAILING_VALUE = re.compile(r"\s*(?<![<>=!])=(?![=>]).*$")
_EDGE_JUNK = " \t*_\"'"


@dataclass(frozen=True)
class Judgement:
    """The oracle's verdict on one extractor completion."""

    verdict: str
    extracted: str | None = None
    canonical: str | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"


# ---------------------------------------------------------------------------------------------------- extraction


def _is_blank(line: str) -> bool:
    return not line.strip() or bool(_FENCE_LINE.match(line))


def _balanced_from(lines: list[str], start: int, first: str) -> str:
    """`first`, joined with the following lines while it opens more parentheses than it closes."""
    text = first
    index = start
    while text.count("(") > text.count(")") and index < len(lines):
        if not _is_blank(lines[index]):
            text = f"{text} {lines[index].strip()}"
        index += 1
    return text


def _raw_answer(completion: str) -> str | None:
    lines = completion.splitlines()
    for index in range(len(lines) - 1, -1, -1):
        match = _LABEL_LINE.match(lines[index])
        if match is None:
            continue
        rest = match.group("rest").strip()
        if rest:
            return _balanced_from(lines, index + 1, rest)
        following = [i for i in range(index + 1, len(lines)) if not _is_blank(lines[i])]
        return _balanced_from(lines, following[0] + 1, lines[following[0]].strip()) if following else None
    blocks = _FENCE_BLOCK.findall(completion)
    if blocks:
        block_lines = [line.strip() for line in blocks[-1].splitlines() if not _is_blank(line)]
        if block_lines:
            return block_lines[-1]
    candidates = [line.strip() for line in lines if not _is_blank(line)]
    return candidates[-1] if candidates else None


def _normalise(text: str) -> str:
    text = text.replace("$", "").replace("`", "")
    for command, replacement in _LATEX:
        text = text.replace(command, replacement)
    text = _LATEX_BRACKET.sub(r"\1", text)
    text = _PLACEHOLDER.sub(r"\1", text)
    text = text.strip(_EDGE_JUNK).rstrip(".").strip(_EDGE_JUNK)
    named = _LEADING_NAME.match(text)
    if named is not None and text[named.end() :].strip():
        text = text[named.end() :]
    text = _TRAILING_VALUE.sub("", text)
    return text.strip(_EDGE_JUNK).rstrip(".").strip(_EDGE_JUNK)


def extract_expression(completion: str | None) -> str | None:
    """The answer in an extractor completion, normalised; None when there is none.

    Where: the text after the last line starting with ``Expression:`` (any case, markdown emphasis allowed; when that
    line is empty, the next non-empty line; lines are joined while parentheses are open), else the last non-empty line
    of the last fenced code block, else the last non-empty line. Normalised: ``$`` and backticks removed (and
    ``\\times``/``\\div``/``\\cdot``), placeholder braces ``{A}`` -> ``A``, surrounding quotes, a trailing period, a
    leading ``<name> =`` and a trailing ``= <value>`` dropped.
    """
    if completion is None or not completion.strip():
        return None
    raw = _raw_answer(completion)
    if raw is None:
        return None
    text = _normalise(raw)
    return text or None


# ---------------------------------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class _Parsed:
    """A parsed answer: its tree, domain value (sympy) and canonical string, or the parse error."""

    node: Node | None = None
    value: Any = None
    canonical: str | None = None
    error: str | None = None


def _check_domain(domain: str) -> None:
    if domain not in ORACLE_DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; choose one of {', '.join(ORACLE_DOMAINS)}")


def _undefined(value: Any) -> bool:
    return bool(value.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo))


def _arithmetic_canonical(value: Any) -> str:
    return sympy.srepr(sympy.cancel(sympy.together(value)))


def _parse_arithmetic(text: str) -> Node:
    """The project's infix grammar first, else the notations SymPy's parser reads (powers, implicit products)."""
    try:
        return parse_infix(text, get_domain("arithmetic").syntax)
    except ValueError as infix_error:
        try:
            return parse_sympy_notation(text)
        except ValueError as sympy_error:
            raise ValueError(f"{infix_error}; as SymPy notation: {sympy_error}") from None


def _parse_tree(domain: str, text: str) -> Node:
    if domain == "arithmetic":
        return _parse_arithmetic(text)
    return parse_sexpr(text) if domain == "assembly" else parse_infix(text, get_domain(domain).syntax)


@lru_cache(maxsize=1 << 14)
def _parse(domain: str, text: str) -> _Parsed:
    """Parse an extracted answer and compute its canonical form (cached: the expensive, shared step)."""
    if len(text) > MAX_ANSWER_CHARS:
        return _Parsed(error=f"answer longer than {MAX_ANSWER_CHARS} characters ({len(text)})")
    try:
        node = _parse_tree(domain, text)
    except ValueError as error:
        return _Parsed(error=str(error))
    except RecursionError:
        return _Parsed(error="answer nested too deeply")
    if node.n_ops > MAX_ANSWER_OPERATORS:
        return _Parsed(error=f"answer has more than {MAX_ANSWER_OPERATORS} operators ({node.n_ops})")
    if domain == "arithmetic":
        value = to_sympy(node)
        return _Parsed(node, value, _arithmetic_canonical(value))
    if domain == "logic":
        return _Parsed(node, None, logic_canonical(node))
    return _Parsed(node, None, assembly_canonical(node))


@lru_cache(maxsize=1 << 12)
def _target_value(domain: str, target: Node) -> Any:
    return to_sympy(target) if domain == "arithmetic" else None


def _is_zero(difference: Any) -> bool:
    if difference == 0:
        return True
    if difference.is_rational_function():
        return sympy.cancel(sympy.together(difference)) == 0
    return sympy.simplify(difference) == 0


@lru_cache(maxsize=1 << 16)
def _equivalent(domain: str, text: str, target: Node) -> bool:
    parsed = _parse(domain, text)
    assert parsed.node is not None
    if domain == "arithmetic":
        expected = _target_value(domain, target)
        if _undefined(parsed.value) or _undefined(expected):
            return False
        return _is_zero(parsed.value - expected)
    if domain == "logic":
        return logic_equivalent(parsed.node, target)
    return assembly_equivalent(parsed.node, target)


def canonical_form(extracted: str, domain: str) -> str | None:
    """The canonical string of an extracted answer (None when it does not parse): equal iff the answers agree."""
    _check_domain(domain)
    return _parse(domain, extracted).canonical


def judge(completion: str | None, target: Node, domain: str) -> Judgement:
    """Judge an extractor completion against the target expression in ``domain`` (one of `ORACLE_DOMAINS`).

    ``no_output``: None or blank completion; ``parse_error``: no answer found, or one that does not parse, is longer
    than `MAX_ANSWER_CHARS` characters or has more than `MAX_ANSWER_OPERATORS` operators; else correct or wrong.
    """
    _check_domain(domain)
    if completion is None or not completion.strip():
        return Judgement("no_output")
    extracted = extract_expression(completion)
    if extracted is None:
        return Judgement("parse_error", error="no expression found in the completion")
    parsed = _parse(domain, extracted)
    if parsed.error is not None:
        return Judgement("parse_error", extracted, error=parsed.error)
    verdict = "correct" if _equivalent(domain, extracted, target) else "wrong"
    return Judgement(verdict, extracted, parsed.canonical)


ERROR_TYPES = ("operator_count", "operators", "leaves", "structure", "parse_error", "no_output")


def _operators(node: Node) -> list[str]:
    return sorted(str(sub.op) for sub, _ in node.walk() if not sub.is_leaf)


def error_type(judgement: Judgement, target: Node, domain: str) -> str | None:
    """Why an answer is wrong (NL paper App. I), None for a correct one: a different operator count, the same count
    but other operators, the same operators but other leaves, or the same parts arranged differently (structure)."""
    if judgement.verdict == "correct":
        return None
    if judgement.verdict != "wrong" or judgement.extracted is None:
        return judgement.verdict
    node = _parse(domain, judgement.extracted).node
    assert node is not None  # a wrong verdict comes from a parsed answer
    if node.n_ops != target.n_ops:
        return "operator_count"
    if _operators(node) != _operators(target):
        return "operators"
    if sorted(map(str, node.leaves())) != sorted(map(str, target.leaves())):
        return "leaves"
    return "structure"


def _judge_one(item: tuple[str | None, str, str]) -> tuple[Judgement, str | None]:
    completion, target_sexpr, domain = item
    target = parse_sexpr(target_sexpr)
    judgement = judge(completion, target, domain)
    return judgement, error_type(judgement, target, domain)


def judge_many(
    items: Sequence[tuple[str | None, str]], domain: str, workers: int = 1, progress: bool = False
) -> list[tuple[Judgement, str | None]]:
    """(judgement, error type) of each (completion, target S-expression), in order; `workers` > 1 spreads them over
    processes (App. M parallelizes simplification with a process pool), each keeping its own caches."""
    from tqdm.auto import tqdm

    work = [(completion, target, domain) for completion, target in items]
    bar = {"total": len(work), "desc": "judge", "unit": "answer", "disable": not progress}
    if workers <= 1 or len(work) < 2:
        return [_judge_one(item) for item in tqdm(work, **bar)]
    from concurrent.futures import ProcessPoolExecutor

    chunk = max(1, min(256, len(work) // (4 * workers)))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(tqdm(pool.map(_judge_one, work, chunksize=chunk), **bar))


__all__ = [
    "ERROR_TYPES",
    "MAX_ANSWER_CHARS",
    "MAX_ANSWER_OPERATORS",
    "ORACLE_DOMAINS",
    "VERDICTS",
    "Judgement",
    "canonical_form",
    "error_type",
    "extract_expression",
    "judge",
    "judge_many",
]
