"""Procedural word problems (NL paper §4, App. O): one numbered step per operator, and their exact parsers.

A tree is rendered in post-order, one sentence per internal node, each operand being a leaf or the result of an
earlier step. Arithmetic and logic use ordinal markers ("First, add {A} and 3. Second, divide the first result by
{B}."), assembly uses "Step 1: Polish the red gear. Step 2: Mount the result of step 1 onto the blue plate.". Every
operator has several paraphrase templates chosen by the caller's rng; argument order is fixed by each template
("subtract Y from X" is ``X - Y``), so ``parse_*_procedure(render_*(t, rng)) == t`` for every template.

Arithmetic text holds no ``+ - * / =`` (hyphens only inside words such as "twenty-first"; negative constants read
"negative 3") and passes the leakage guard of :mod:`eval.nl.guard`. Its degenerate-repetition check (a six-word
n-gram seen three times) is why earlier results read "the second result" rather than "the result of the second step"
and why no arithmetic or logic template has a fixed run of more than four words: every six-word window then holds
an ordinal or a leaf. These texts serve as fine-tuning word problems and as a deterministic NL generator.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from dsl.expr.assembly import COLOURS, OBJECTS, leaf_words, parse_leaf_words
from dsl.expr.prompts import PLACEHOLDER, VARIABLE_NAME, placeholder
from dsl.expr.tree import Node, leaf, op

# Templates: "{0}", "{1}", "{2}" are the operands in argument order. Every operator of a domain has the same number of
# templates, so one index can force the same template everywhere (tests cover each).
ARITHMETIC_TEMPLATES: dict[str, tuple[str, ...]] = {
    "+": ("add {0} and {1}", "add {1} to {0}", "find the sum of {0} and {1}"),
    "-": ("subtract {1} from {0}", "take {1} away from {0}", "reduce {0} by {1}"),
    "*": ("multiply {0} by {1}", "find the product of {0} and {1}", "take {0} times {1}"),
    "/": ("divide {0} by {1}", "share {0} equally among {1}", "find the ratio of {0} to {1}"),
}
LOGIC_TEMPLATES: dict[str, tuple[str, ...]] = {
    "and": (
        "check that {0} and {1} both hold",
        "confirm that both {0} and {1} are true",
        "require {0} as well as {1}",
    ),
    "or": (
        "check that {0}, {1} or both hold",
        "confirm that {0} is true or {1} is true, or both",
        "require {0} or {1}, or both",
    ),
    "xor": (
        "check that either {0} or {1} holds, not both",
        "confirm that {0} and {1} have different truth values",
        "require {0} or {1}, but not both",
    ),
    "implies": (
        "check that whenever {0} holds, {1} holds too",
        "confirm that if {0} is true then {1} is true",
        "require that {0} implies {1}",
    ),
    "iff": (
        "check that {0} holds exactly when {1} holds",
        "confirm that {0} and {1} have equal truth values",
        "require {0} precisely when {1}",
    ),
}
ASSEMBLY_TEMPLATES: dict[str, tuple[str, ...]] = {
    "label": ("Label {0}", "Attach a label to {0}"),
    "inspect": ("Inspect {0}", "Check {0} for defects"),
    "polish": ("Polish {0}", "Buff {0} until it shines"),
    "weld": ("Weld {0} and {1} together", "Join {0} and {1} with a weld"),
    "glue": ("Glue {0} and {1} together", "Bond {0} and {1} with glue"),
    "rivet": ("Rivet {0} and {1} together", "Fasten {0} and {1} with rivets"),
    "mount": ("Mount {0} onto {1}", "Fix {0} in place on top of {1}"),
    "pour": ("Pour {0} into {1}", "Empty {0} into {1}"),
    "load": ("Load {0} onto {1}", "Put {0} on {1} as its load"),
    "mix": ("Mix {0}, {1} and {2}", "Blend {0}, {1} and {2} together"),
    "assort": ("Assort {0}, {1} and {2}", "Sort {0}, {1} and {2} into one set"),
    "layer": ("Layer {0}, then {1}, then {2}", "Stack {0} at the bottom, {1} in the middle and {2} on top"),
    "thread": ("Thread {0}, {1} and {2} in that order", "Thread {0} through {1} and then through {2}"),
}

# ---------------------------------------------------------------------------------------------------- ordinals

_UNITS = ("", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")
_TEENS = (
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
)
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_TENS_ORDINAL = tuple(f"{word[:-1]}ieth" if word else "" for word in _TENS)  # "twenty" -> "twentieth"
MAX_ORDINAL = 99


def ordinal(n: int) -> str:
    """English ordinal word of 1..99: "first", "eleventh", "twenty-first"."""
    if not 1 <= n <= MAX_ORDINAL:
        raise ValueError(f"ordinal words cover 1..{MAX_ORDINAL}, got {n}")
    if n < 10:
        return _UNITS[n]
    if n < 20:
        return _TEENS[n - 10]
    tens, units = divmod(n, 10)
    return _TENS_ORDINAL[tens] if units == 0 else f"{_TENS[tens]}-{_UNITS[units]}"


_ORDINAL_VALUE = {ordinal(n): n for n in range(1, MAX_ORDINAL + 1)}


def _ordinal_value(word: str) -> int:
    if word.lower() not in _ORDINAL_VALUE:
        raise ValueError(f"{word!r} is not an ordinal step marker")
    return _ORDINAL_VALUE[word.lower()]


# ---------------------------------------------------------------------------------------------------- the engine


_SLOT = re.compile(r"\{(\d)\}")


def _slots(template: str) -> list[int]:
    return [int(index) for index in _SLOT.findall(template)]


def _template_regex(template: str, operand: str) -> re.Pattern[str]:
    parts = _SLOT.split(template)
    pattern = "".join(re.escape(part) if i % 2 == 0 else f"(?P<a{part}>{operand})" for i, part in enumerate(parts))
    return re.compile(pattern)


@dataclass(frozen=True)
class _Style:
    """One domain's procedural style: templates, how leaves and step references read, how a step sentence reads."""

    templates: Mapping[str, tuple[str, ...]]
    leaf_pattern: str  # regex of one leaf phrase (no capturing groups)
    render_leaf: Callable[[str | int], str]
    parse_leaf: Callable[[str], str | int]
    ref_pattern: str  # regex of "the result of <step n>" with one capturing group for n
    render_ref: Callable[[int], str]
    ref_value: Callable[[str], int]
    sentence_pattern: re.Pattern[str]  # groups "marker" and "clause"
    render_sentence: Callable[[int, str], str]
    marker_value: Callable[[str], int]
    matchers: tuple[tuple[str, re.Pattern[str]], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        reference = re.sub(r"\((?!\?)", "(?:", self.ref_pattern)  # the same phrase without its capturing group
        operand = f"(?:{self.leaf_pattern}|{reference})"
        matchers = tuple(
            (name, _template_regex(template, operand))
            for name, options in self.templates.items()
            for template in options
        )
        object.__setattr__(self, "matchers", matchers)


def _render(style: _Style, node: Node, rng: random.Random, template: int | None) -> str:
    if node.is_leaf:
        raise ValueError("a procedure needs at least one operator; got a bare leaf")
    clauses: list[str] = []

    def visit(current: Node) -> str:
        if current.is_leaf:
            return style.render_leaf(current.value)  # type: ignore[arg-type]
        options = style.templates.get(current.op)  # type: ignore[arg-type]
        if options is None:
            raise ValueError(f"operator {current.op!r} has no procedural template; known: {sorted(style.templates)}")
        if template is not None and not 0 <= template < len(options):
            raise ValueError(f"template must be in 0..{len(options) - 1} for {current.op!r}, got {template}")
        chosen = options[template if template is not None else rng.randrange(len(options))]
        if len(current.children) != len(_slots(chosen)):
            arity = len(_slots(chosen))
            raise ValueError(f"operator {current.op!r} takes {arity} operands, got {len(current.children)}")
        operands = [visit(child) for child in current.children]
        clauses.append(chosen.format(*operands))
        return style.render_ref(len(clauses))

    visit(node)
    return " ".join(style.render_sentence(i, clause) for i, clause in enumerate(clauses, start=1))


def _parse(style: _Style, text: str) -> Node:
    normalized = " ".join(text.split())
    sentences = [s for s in re.split(r"(?<=\.) ", normalized) if s]
    if not sentences:
        raise ValueError("empty procedure")
    results: list[Node] = []
    used: set[int] = set()
    ref_re = re.compile(style.ref_pattern)
    for number, sentence in enumerate(sentences, start=1):
        match = style.sentence_pattern.fullmatch(sentence)
        if match is None:
            raise ValueError(f"step {number} is not a step sentence: {sentence!r}")
        if style.marker_value(match["marker"]) != number:
            raise ValueError(f"step {number} is marked {match['marker']!r}")
        clause = match["clause"]
        hits = [(name, found) for name, regex in style.matchers if (found := regex.fullmatch(clause)) is not None]
        if len(hits) != 1:
            raise ValueError(f"step {number} matches {len(hits)} templates (need exactly one): {clause!r}")
        name, found = hits[0]
        children = []
        for slot in range(len(found.groupdict())):
            operand = found[f"a{slot}"]
            reference = ref_re.fullmatch(operand)
            if reference is None:
                children.append(leaf(style.parse_leaf(operand)))
                continue
            earlier = style.ref_value(reference.group(1))
            if not 1 <= earlier < number:
                raise ValueError(f"step {number} uses the result of step {earlier}, which is not an earlier step")
            if earlier in used:
                raise ValueError(f"the result of step {earlier} is used twice")
            used.add(earlier)
            children.append(results[earlier - 1])
        results.append(op(name, *children))
    unused = sorted(set(range(1, len(results))) - used)
    if unused:
        raise ValueError(f"the results of steps {unused} are never used")
    return results[-1]


# ---------------------------------------------------------------------------------------------------- the domains

_VARIABLE = re.compile(VARIABLE_NAME)
_ORDINAL_PATTERN = r"[A-Za-z]+(?:-[a-z]+)?"


def _placeholder(value: str | int) -> str:
    if not isinstance(value, str) or not _VARIABLE.fullmatch(value):
        raise ValueError(f"{value!r} is not a variable name")
    return placeholder(value)


def _arithmetic_leaf(value: str | int) -> str:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not an arithmetic leaf")
    if isinstance(value, int):
        return str(value) if value >= 0 else f"negative {-value}"
    return _placeholder(value)


def _parse_arithmetic_leaf(text: str) -> str | int:
    if text.startswith("{"):
        return text[1:-1]
    return -int(text.removeprefix("negative ")) if text.startswith("negative ") else int(text)


def _ordinal_sentence(number: int, clause: str) -> str:
    return f"{ordinal(number).capitalize()}, {clause}."


_ORDINAL_SENTENCE = re.compile(rf"(?P<marker>{_ORDINAL_PATTERN}), (?P<clause>[^.]+)\.")
_ORDINAL_REF = rf"the ({_ORDINAL_PATTERN}) result"

_ARITHMETIC = _Style(
    templates=ARITHMETIC_TEMPLATES,
    leaf_pattern=rf"{PLACEHOLDER}|(?:negative )?[0-9]+",
    render_leaf=_arithmetic_leaf,
    parse_leaf=_parse_arithmetic_leaf,
    ref_pattern=_ORDINAL_REF,
    render_ref=lambda n: f"the {ordinal(n)} result",
    ref_value=_ordinal_value,
    sentence_pattern=_ORDINAL_SENTENCE,
    render_sentence=_ordinal_sentence,
    marker_value=_ordinal_value,
)
_LOGIC = _Style(
    templates=LOGIC_TEMPLATES,
    leaf_pattern=PLACEHOLDER,
    render_leaf=_placeholder,
    parse_leaf=lambda text: text[1:-1],
    ref_pattern=_ORDINAL_REF,
    render_ref=lambda n: f"the {ordinal(n)} result",
    ref_value=_ordinal_value,
    sentence_pattern=_ORDINAL_SENTENCE,
    render_sentence=_ordinal_sentence,
    marker_value=_ordinal_value,
)
_ASSEMBLY = _Style(
    templates=ASSEMBLY_TEMPLATES,
    leaf_pattern=rf"the (?:{'|'.join(COLOURS)}) (?:{'|'.join(OBJECTS)})",
    render_leaf=lambda value: leaf_words(str(value)),
    parse_leaf=parse_leaf_words,
    ref_pattern=r"the result of step ([0-9]+)",
    render_ref=lambda n: f"the result of step {n}",
    ref_value=int,
    sentence_pattern=re.compile(r"Step (?P<marker>[0-9]+): (?P<clause>[^.]+)\."),
    render_sentence=lambda n, clause: f"Step {n}: {clause}.",
    marker_value=int,
)


def render_arithmetic(node: Node, rng: random.Random, template: int | None = None) -> str:
    """Ordinal steps ("First, add {A} and 3. Second, ..."); `template` forces one template index for every step."""
    return _render(_ARITHMETIC, node, rng, template)


def parse_arithmetic_procedure(text: str) -> Node:
    """Inverse of :func:`render_arithmetic`; ValueError on text no template produces."""
    return _parse(_ARITHMETIC, text)


def render_logic(node: Node, rng: random.Random, template: int | None = None) -> str:
    """Ordinal steps ("First, check that {A} and {B} both hold. Second, ..."); leaves must be variables."""
    return _render(_LOGIC, node, rng, template)


def parse_logic_procedure(text: str) -> Node:
    """Inverse of :func:`render_logic`; ValueError on text no template produces."""
    return _parse(_LOGIC, text)


def render_assembly(node: Node, rng: random.Random, template: int | None = None) -> str:
    """Numbered steps ("Step 1: Polish the red gear. Step 2: Mount the result of step 1 onto the blue plate.")."""
    return _render(_ASSEMBLY, node, rng, template)


def parse_assembly_procedure(text: str) -> Node:
    """Inverse of :func:`render_assembly`; ValueError on text no template produces."""
    return _parse(_ASSEMBLY, text)


_STYLES = {"arithmetic": _ARITHMETIC, "logic": _LOGIC, "assembly": _ASSEMBLY}


def _style(domain: str) -> _Style:
    if domain not in _STYLES:
        raise ValueError(f"no procedural style for domain {domain!r}; choose one of {sorted(_STYLES)}")
    return _STYLES[domain]


def render_procedure(node: Node, domain: str, rng: random.Random) -> str:
    """The procedural word problem of `node` in `domain` (arithmetic, logic or assembly)."""
    return _render(_style(domain), node, rng, None)


def parse_procedure(text: str, domain: str) -> Node:
    """Inverse of :func:`render_procedure`; ValueError on text no template of `domain` produces."""
    return _parse(_style(domain), text)


__all__ = [
    "ARITHMETIC_TEMPLATES",
    "ASSEMBLY_TEMPLATES",
    "LOGIC_TEMPLATES",
    "MAX_ORDINAL",
    "ordinal",
    "parse_arithmetic_procedure",
    "parse_assembly_procedure",
    "parse_logic_procedure",
    "parse_procedure",
    "render_arithmetic",
    "render_assembly",
    "render_logic",
    "render_procedure",
]
