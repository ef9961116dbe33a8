"""Generator and extractor prompts of the NL round trip (NL paper §2.2, App. A): pi_G^gamma and pi_E^epsilon.

The generator turns an expression into a word problem that names variables only through placeholders (``{A}``) and
uses no mathematical notation; the extractor reads the word problem alone and answers with the expression on a last
line ``Expression: ...``. Shots come from hand-written pools kept apart from the evaluation suite: generator shots
from one half of a domain's pool, extractor shots from the other, so the two roles never see the same exemplar.
Training data (``dsl/expr/ft_data.py``) uses the same prompts, so fine-tuned models are evaluated as they were trained.
"""

from __future__ import annotations

from dataclasses import dataclass

ANSWER_PREFIX = "Expression:"
VARIABLE_NAME = r"[A-Za-z][A-Za-z0-9_]*"  # a variable's name, as written inside a placeholder
PLACEHOLDER = rf"\{{{VARIABLE_NAME}\}}"  # how word problems name a variable: {A}


def placeholder(name: str) -> str:
    """The placeholder of variable `name` in a word problem: ``{A}``."""
    return "{" + name + "}"


@dataclass(frozen=True)
class Shot:
    """A hand-written exemplar: an expression (the domain's infix or S-expression form) and its word problem."""

    expression: str
    word_problem: str


@dataclass(frozen=True)
class DomainPrompts:
    """A domain's instructions and shot pools."""

    generator_instructions: str
    extractor_instructions: str
    generator_pool: tuple[Shot, ...]
    extractor_pool: tuple[Shot, ...]


_ARITHMETIC_GENERATOR = (
    "Write a short word problem whose answer is computed exactly by the arithmetic expression below.\n"
    "Rules: refer to each variable only by its placeholder in curly braces, exactly as written (for example {A}); "
    "write constants as digits; use no mathematical symbols (no + - * / = ^ and no parentheses around letters); "
    "do not state the expression or the answer. Make the order of the operations clear from the story."
)
_ARITHMETIC_EXTRACTOR = (
    "Read the word problem and write the arithmetic expression that computes its answer, using each placeholder's "
    "variable as a single capital letter (without braces), integer constants, + - * / and parentheses. "
    f"Finish with one line of the form '{ANSWER_PREFIX} <expression>'."
)

# Hand-written pools: expressions outside the suite's shapes where possible (one or nine operators, or constants the
# suite rarely draws); `eval.nl.protocol` still drops any suite item equal to a shot.
_ARITHMETIC_GENERATOR_POOL = (
    Shot(
        "(A + B) * 3",
        "A baker fills {A} trays of rolls in the morning and {B} trays in the afternoon. "
        "Every tray is then split into 3 boxes. How many boxes are there?",
    ),
    Shot(
        "A - B / 4",
        "A hiker starts the day with {A} liters of water. She pours {B} liters into 4 equal bottles and gives one "
        "bottle away. How much water does she have left?",
    ),
    Shot(
        "(C - D) / (E + 2)",
        "A club has {C} dollars and spends {D} dollars on snacks. The rest is shared equally among {E} members "
        "and 2 guests. How much does each person get?",
    ),
)
_ARITHMETIC_EXTRACTOR_POOL = (
    Shot(
        "A * (B + C)",
        "Each of {A} crates holds {B} apples and {C} pears. How many pieces of fruit are there in all?",
    ),
    Shot(
        "(D - 5) / F",
        "A shelf has {D} books. After 5 are sold, the remaining books are packed evenly into {F} boxes. "
        "How many books go in each box?",
    ),
    Shot(
        "G + H * 2 - B",
        "A farmer has {G} goats and buys {H} pairs of sheep, then sells {B} of the animals. "
        "How many animals does the farmer have now?",
    ),
)

_LOGIC_GENERATOR = (
    "Write a short scenario in plain English whose truth condition is exactly the propositional formula below.\n"
    "Rules: refer to each proposition only by its placeholder in curly braces, exactly as written (for example {A}); "
    "use no logical symbols (no & | ^ ~ -> <-> and no parentheses around letters); do not state the formula."
)
_LOGIC_EXTRACTOR = (
    "Read the scenario and write the propositional formula that states when it holds, using each placeholder's "
    "proposition as a single capital letter (without braces), the connectives & (and), | (or), ^ (exclusive or), "
    "-> (implies), <-> (if and only if) and parentheses. "
    f"Finish with one line of the form '{ANSWER_PREFIX} <formula>'."
)
_LOGIC_GENERATOR_POOL = (
    Shot("(A & B) -> C", "If {A} holds and {B} holds as well, then {C} must hold."),
    Shot("A ^ (B | C)", "Exactly one of these is true: {A}, or at least one of {B} and {C}."),
    Shot("(A <-> B) & C", "{A} holds precisely when {B} does, and in any case {C} holds."),
)
_LOGIC_EXTRACTOR_POOL = (
    Shot("A | (B & C)", "Either {A} holds, or both {B} and {C} hold (or all of them)."),
    Shot("(D -> E) <-> F", "{F} holds exactly when it is true that whenever {D} holds, {E} holds too."),
    Shot("G & (H ^ A)", "{G} holds, and exactly one of {H} and {A} holds."),
)

_ASSEMBLY_GENERATOR = (
    "Write step-by-step assembly instructions that build exactly the object described by the expression below. "
    "Name every part by its colour and object, and make clear which earlier result each step uses."
)
_ASSEMBLY_EXTRACTOR = (
    "Read the assembly instructions and write the expression they build as an S-expression, for example "
    "(mount (polish red-gear) blue-plate). "
    f"Finish with one line of the form '{ANSWER_PREFIX} <expression>'."
)

PROMPTS: dict[str, DomainPrompts] = {
    "arithmetic": DomainPrompts(
        _ARITHMETIC_GENERATOR, _ARITHMETIC_EXTRACTOR, _ARITHMETIC_GENERATOR_POOL, _ARITHMETIC_EXTRACTOR_POOL
    ),
    "logic": DomainPrompts(_LOGIC_GENERATOR, _LOGIC_EXTRACTOR, _LOGIC_GENERATOR_POOL, _LOGIC_EXTRACTOR_POOL),
    "assembly": DomainPrompts(_ASSEMBLY_GENERATOR, _ASSEMBLY_EXTRACTOR, (), ()),
}


def domain_prompts(domain: str) -> DomainPrompts:
    """The prompts of `domain`; one clear error for an unknown one."""
    if domain not in PROMPTS:
        raise ValueError(f"unknown domain {domain!r}; choose one of {sorted(PROMPTS)}")
    return PROMPTS[domain]


def _shots(pool: tuple[Shot, ...], count: int, domain: str, role: str) -> tuple[Shot, ...]:
    if count < 0 or count > len(pool):
        raise ValueError(f"{role} shots for {domain} must be in 0..{len(pool)}, got {count}")
    return pool[:count]


def generator_prompt(expression: str, domain: str = "arithmetic", shots: int = 0) -> str:
    """pi_G^gamma: the generator's user turn for `expression` with `shots` exemplars."""
    prompts = domain_prompts(domain)
    parts = [prompts.generator_instructions]
    for shot in _shots(prompts.generator_pool, shots, domain, "generator"):
        parts.append(f"Expression: {shot.expression}\nWord problem: {shot.word_problem}")
    parts.append(f"Expression: {expression}\nWord problem:")
    return "\n\n".join(parts)


def extractor_prompt(word_problem: str, domain: str = "arithmetic", shots: int = 0) -> str:
    """pi_E^epsilon: the extractor's user turn for `word_problem` with `shots` exemplars."""
    prompts = domain_prompts(domain)
    parts = [prompts.extractor_instructions]
    for shot in _shots(prompts.extractor_pool, shots, domain, "extractor"):
        parts.append(f"Word problem: {shot.word_problem}\n{ANSWER_PREFIX} {shot.expression}")
    parts.append(f"Word problem: {word_problem.strip()}")
    return "\n\n".join(parts)


def shot_expressions(domain: str) -> list[str]:
    """Every exemplar expression of `domain` (both pools), for keeping them out of the evaluation set."""
    prompts = domain_prompts(domain)
    return [shot.expression for shot in prompts.generator_pool + prompts.extractor_pool]


__all__ = [
    "ANSWER_PREFIX",
    "PLACEHOLDER",
    "PROMPTS",
    "VARIABLE_NAME",
    "DomainPrompts",
    "Shot",
    "domain_prompts",
    "extractor_prompt",
    "generator_prompt",
    "placeholder",
    "shot_expressions",
]
