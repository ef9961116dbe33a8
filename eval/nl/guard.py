"""The rule-based leakage guard of the NL round trip and the generator-fault checks (NL paper §2.2, App. C).

A word problem must carry the expression's structure through prose alone. Every check reads the text as
`eval.nl.guard_text.normalize_text` writes it (HTML entities decoded, NFKC, invisible characters removed, every space
and line break a plain space, operator and bracket look-alikes such as ``× ÷ ＋ – [ ]`` made ASCII), so NBSPs,
zero-width spaces, newlines and fullwidth or typographic glyphs cannot hide a leak. Three regex checks reject leaked
notation:

1. operator adjacency: an operand (letter, digit, placeholder ``{X}`` or closing parenthesis), optional spaces, an
   operator of ``GuardConfig.operator_class`` (the paper's ``[+*/]``), optional spaces, an operand (letter, digit,
   placeholder or opening parenthesis): ``A + B``, ``{A}*{B}``, ``3/4``. The match is character-level, as in the
   paper, so ``and/or`` and markdown ``*italics*`` after a word count as leaks too. The minus sign ``−`` (U+2212,
   never a hyphen) between two operand tokens counts as well (``A − B``, ``5 − 3``; ``to −5 degrees`` passes);
2. a parenthesis opening right before a variable token (a single capital letter or a placeholder): ``(A``, ``({A}``;
3. a parenthesis closing right after one: ``B)``, ``{B})``.

Notation the paper's regexes do not see is a leak too (verdict ``leak``, kinds in `GuardResult.notation`, in
`NOTATION_KINDS` order): ``latex`` (``\\frac``, ``\\cdot`` and other math commands, ``^{..}``, a ``$..$`` span holding
an operator), ``ast`` (a bracketed prefix tree of any bracket kind, ``(+ A (* B C))``, ``[+ {A} [* {B} {C}]]``,
``(add 3 4)``, or a quoted operator as in a JSON AST), ``spelled`` (symbols named in words: "open parenthesis",
"plus sign", "asterisk"), ``encoded`` (base64, hex or percent-encoded text that decodes to a leak under the strict
checks) and ``reversed`` (a text that leaks read backwards, ``}C{ * }B{ + }A{``, and not forwards).

Known gaps kept on purpose in the default mode (App. C, "Known regex gaps"): the hyphen-minus is not an operator there
because ``-`` is also the English hyphen (``A - B`` and ``5 - 3`` pass, and so do ``A – B`` with an en dash), and only
letter-adjacent parentheses count (``(5 - 3)`` passes). ``GuardConfig(strict=True)`` closes them: the glyphs ``= ^ −``
anywhere, a minus between two operand tokens (single letters, numbers, placeholders, parentheses; ``twenty-one``
still passes), and digit-adjacent parentheses. Because guard rejections are charged as round-trip failures, a
stricter guard only lowers accuracy (the paper's bias-direction argument).

Generator faults are counted apart from leaks: placeholders missing from the text, and degenerate repetition (a word
n-gram repeated ``repetition_count`` times, small models looping). Only operator adjacency enters the paper's Leak %
column (`GuardResult.leak_pass`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from dsl.expr.prompts import PLACEHOLDER, placeholder
from eval.nl.guard_text import MINUS_SIGN, decoded_payloads, normalize_text

GUARD_VERDICTS = ("pass", "no_output", "leak", "paren_leak", "missing_placeholder", "degenerate")
NOTATION_KINDS = ("latex", "ast", "spelled", "encoded", "reversed")

# A variable token: a capital letter that is a word on its own, or a placeholder.
_VARIABLE = rf"(?:(?<![A-Za-z0-9_])[A-Z](?![A-Za-z0-9_])|{PLACEHOLDER})"
_OPERAND_BEFORE = rf"(?:[A-Za-z0-9)]|{PLACEHOLDER})"
_OPERAND_AFTER = rf"(?:[A-Za-z0-9(]|{PLACEHOLDER})"
_PAREN_OPEN = re.compile(rf"\([ \t]*{_VARIABLE}")
_PAREN_CLOSE = re.compile(rf"{_VARIABLE}[ \t]*\)")
# Strict mode: glyphs that never occur in plain prose, a minus between operand tokens, digit-adjacent parentheses.
_STRICT_GLYPHS = re.compile(rf"[=^{MINUS_SIGN}]")
_TOKEN_BEFORE = rf"(?:(?<![A-Za-z])[A-Za-z]|\d|\)|{PLACEHOLDER})"
_TOKEN_AFTER = rf"(?:[A-Za-z](?![A-Za-z])|\d|\(|{PLACEHOLDER})"
_STRICT_MINUS = re.compile(rf"{_TOKEN_BEFORE}[ \t]*-[ \t]*{_TOKEN_AFTER}")
_SIGN_MINUS = re.compile(rf"{_TOKEN_BEFORE}[ \t]*{MINUS_SIGN}[ \t]*{_TOKEN_AFTER}")  # every mode: never a hyphen
_DIGIT_PARENS = re.compile(r"\([ \t]*\d|\d[ \t]*\)")
# Notation beyond operator adjacency (NOTATION_KINDS).
_LATEX = re.compile(
    r"\\(?:[dt]?frac|c?dots?|times|div|ast|pm|mp|sqrt|left|right|over|binom)(?![A-Za-z])|[\^_][ \t]*\{"
)
_MATH_SPAN = re.compile(r"\$([^$]+)\$")
_ATOM = rf"(?:{_VARIABLE}|\d+)"
_OPERATOR_WORD = r"(?i:add|sub|subtract|mul|multiply|div|divide|plus|minus|times)(?![A-Za-z])"
_PREFIX_OPERATOR = rf"(?:[-+*/{MINUS_SIGN}]|{_OPERATOR_WORD})"
_PREFIX_AST = re.compile(rf"[({{][ \t]*{_PREFIX_OPERATOR}[ \t]*{_ATOM}[ \t]*(?:{_ATOM}|[({{])")
_QUOTED_OPERATOR = re.compile(rf"[\"'][ \t]*[-+*/{MINUS_SIGN}][ \t]*[\"']")
_SYMBOL_NAMES = re.compile(  # searched in lower case; "left bracket" is left alone (shelf hardware)
    r"(?<![a-z])(?:(?:open(?:ing)?|clos(?:e|ed|ing))[ -]?(?:paren(?:s|thesis|theses)?|brackets?|braces?)"
    r"|(?:left|right)[ -]?paren(?:s|thesis|theses)?"
    r"|(?:plus|minus|times|multiplication|multiply|division|divide|equals?)[ -]signs?"
    r"|asterisks?|forward[ -]?slash(?:es)?|obelus)(?![a-z])"
)
_WORD = re.compile(r"\{\w+\}|[a-z0-9']+")
_LABEL = re.compile(r"^[\s*_#]*word[ _-]?problem[\s*_]*:[\s*_]*", re.IGNORECASE)
_ANSWER_LINE = re.compile(r"^[ \t*_#>-]*(?:expression|answer)[ \t*_]*:", re.IGNORECASE | re.MULTILINE)
# Quotes around a whole completion: (opening, closing) pairs; single quotes are left alone (apostrophes).
_QUOTE_PAIRS = {'"': '"', "“": "”", "`": "`"}


@dataclass(frozen=True)
class GuardConfig:
    """Leakage-guard settings; the defaults are the paper's guard."""

    operator_class: str = field(
        default="[+*/]", metadata={"help": "regex character class of leaked operators (the paper's omits the hyphen)"}
    )
    strict: bool = field(
        default=False,
        metadata={"help": "also reject = ^ − glyphs, a minus between operands and digit-adjacent parentheses"},
    )
    repetition_ngram: int = field(default=6, metadata={"help": "word n-gram length of the repetition check"})
    repetition_count: int = field(
        default=3, metadata={"help": "occurrences of one n-gram that make a text degenerate"}
    )

    def __post_init__(self) -> None:
        if not self.operator_class:
            raise ValueError("operator_class must not be empty")
        try:
            re.compile(self.operator_class)
        except re.error as error:
            raise ValueError(f"operator_class is not a valid regex: {error}") from error
        if self.repetition_ngram < 1:
            raise ValueError(f"repetition_ngram must be >= 1, got {self.repetition_ngram}")
        if self.repetition_count < 2:
            raise ValueError(f"repetition_count must be >= 2, got {self.repetition_count}")


@dataclass(frozen=True)
class GuardResult:
    """The guard's verdict on one word problem and every flag behind it (each computed on its own)."""

    verdict: str
    operator_leak: bool = False
    paren_leak: bool = False
    missing: tuple[str, ...] = ()
    degenerate: bool = False
    notation: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in GUARD_VERDICTS:
            raise ValueError(f"verdict must be one of {GUARD_VERDICTS}, got {self.verdict!r}")
        unknown = set(self.notation) - set(NOTATION_KINDS)
        if unknown:
            raise ValueError(f"notation kinds must be in {NOTATION_KINDS}, got {sorted(unknown)}")

    @property
    def leak_pass(self) -> bool:
        """Clears the operator-adjacency check (the paper's Leak % column counts only this category)."""
        return not self.operator_leak

    @property
    def passed(self) -> bool:
        """The word problem goes on to the extractors."""
        return self.verdict == "pass"


_STRICT = GuardConfig(strict=True)


@lru_cache(maxsize=32)
def _operator_pattern(operator_class: str) -> re.Pattern[str]:
    return re.compile(rf"{_OPERAND_BEFORE}[ \t]*{operator_class}[ \t]*{_OPERAND_AFTER}")


def _operator_leak(normalized: str, config: GuardConfig) -> bool:
    if _operator_pattern(config.operator_class).search(normalized) or _SIGN_MINUS.search(normalized):
        return True
    return config.strict and bool(_STRICT_GLYPHS.search(normalized) or _STRICT_MINUS.search(normalized))


def _paren_leak(normalized: str, config: GuardConfig) -> bool:
    if _PAREN_OPEN.search(normalized) or _PAREN_CLOSE.search(normalized):
        return True
    return config.strict and bool(_DIGIT_PARENS.search(normalized))


def _written_notation(normalized: str) -> tuple[str, ...]:
    """The kinds of notation written out in a normalized text: latex, ast, spelled."""
    spans = (match.group(1) for match in _MATH_SPAN.finditer(normalized))
    found = {
        "latex": bool(_LATEX.search(normalized)) or any(_operator_leak(span, _STRICT) for span in spans),
        "ast": bool(_PREFIX_AST.search(normalized) or _QUOTED_OPERATOR.search(normalized)),
        "spelled": bool(_SYMBOL_NAMES.search(normalized.lower())),
    }
    return tuple(kind for kind, present in found.items() if present)


def _leaks(normalized: str, config: GuardConfig) -> bool:
    """Any written leak in a normalized text: operator adjacency, parentheses or written notation."""
    return _operator_leak(normalized, config) or _paren_leak(normalized, config) or bool(_written_notation(normalized))


def _notation(normalized: str, config: GuardConfig, operator_or_paren_leak: bool) -> tuple[str, ...]:
    """`notation_leaks` of a normalized text whose operator and parenthesis checks are already known."""
    kinds = _written_notation(normalized)
    if any(_leaks(payload, _STRICT) for payload in decoded_payloads(normalized)):
        kinds += ("encoded",)
    if not (operator_or_paren_leak or kinds) and _leaks(normalized[::-1], config):
        kinds += ("reversed",)
    return kinds


def has_operator_leak(text: str, config: GuardConfig = GuardConfig()) -> bool:
    """Check 1: an operator of the configured class between two operands (strict: also glyphs and a minus)."""
    return _operator_leak(normalize_text(text), config)


def has_paren_leak(text: str, config: GuardConfig = GuardConfig()) -> bool:
    """Checks 2 and 3: a parenthesis opening before or closing after a variable token (strict: also a digit)."""
    return _paren_leak(normalize_text(text), config)


def notation_leaks(text: str, config: GuardConfig = GuardConfig()) -> tuple[str, ...]:
    """The `NOTATION_KINDS` found: written notation, encoded payloads that leak under the strict checks, and a text
    that leaks read backwards (only when nothing leaks forwards)."""
    normalized = normalize_text(text)
    return _notation(normalized, config, _operator_leak(normalized, config) or _paren_leak(normalized, config))


def missing_placeholders(text: str, variables: Sequence[str]) -> tuple[str, ...]:
    """The variables (first-seen order, no repeats) whose ``{X}`` placeholder does not occur in the text."""
    return tuple(name for name in dict.fromkeys(variables) if placeholder(name) not in text)


def is_degenerate_repetition(text: str, ngram: int = 6, count: int = 3) -> bool:
    """True when some lower-cased word n-gram occurs at least ``count`` times (a looping generator)."""
    if ngram < 1 or count < 1:
        raise ValueError(f"ngram and count must be >= 1, got {ngram} and {count}")
    words = _WORD.findall(text.lower())
    if len(words) < ngram:
        return False
    grams = Counter(tuple(words[i : i + ngram]) for i in range(len(words) - ngram + 1))
    return max(grams.values()) >= count


def check_word_problem(text: str | None, variables: Sequence[str], config: GuardConfig = GuardConfig()) -> GuardResult:
    """Run every check on a (cleaned) word problem; the verdict is the first failing one in `GUARD_VERDICTS` order.

    ``variables`` are the names the expression uses (``"A"`` for ``{A}``). A None or blank text is ``no_output`` and
    carries no flags.
    """
    if text is None or not text.strip():
        return GuardResult("no_output")
    normalized = normalize_text(text)
    operator_leak = _operator_leak(normalized, config)
    paren_leak = _paren_leak(normalized, config)
    notation = _notation(normalized, config, operator_leak or paren_leak)
    missing = missing_placeholders(text, variables)
    degenerate = is_degenerate_repetition(text, config.repetition_ngram, config.repetition_count)
    if operator_leak or notation:
        verdict = "leak"
    elif paren_leak:
        verdict = "paren_leak"
    elif missing:
        verdict = "missing_placeholder"
    elif degenerate:
        verdict = "degenerate"
    else:
        verdict = "pass"
    return GuardResult(verdict, operator_leak, paren_leak, missing, degenerate, notation)


def _has_quote(text: str, opening: str) -> bool:
    return opening in text or _QUOTE_PAIRS[opening] in text


def clean_word_problem(text: str | None) -> str:
    """The word problem in a generator completion, ready for the guard and the extractor (None: ``""``).

    Strips whitespace, a leading ``Word problem:`` label (markdown emphasis allowed) and quotes around the whole text,
    and cuts the text at the first line starting with ``Expression:`` or ``Answer:`` (a generator appending its answer;
    the cut part never reaches the extractor). Nothing inside the body is rewritten, so leaks there stay visible.
    """
    if text is None:
        return ""
    body = _LABEL.sub("", text.strip(), count=1)
    cut = _ANSWER_LINE.search(body)
    if cut is not None:
        body = body[: cut.start()]
    body = body.strip()
    while len(body) >= 2 and _QUOTE_PAIRS.get(body[0]) == body[-1] and not _has_quote(body[1:-1], body[0]):
        body = body[1:-1].strip()
    return body


__all__ = [
    "GUARD_VERDICTS",
    "NOTATION_KINDS",
    "GuardConfig",
    "GuardResult",
    "check_word_problem",
    "clean_word_problem",
    "has_operator_leak",
    "has_paren_leak",
    "is_degenerate_repetition",
    "missing_placeholders",
    "notation_leaks",
]
