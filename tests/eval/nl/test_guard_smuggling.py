"""Leaks smuggled past character-level regexes are rejected; honest prose and every procedural word problem pass."""

from __future__ import annotations

import base64

import pytest

from dsl.expr.prompts import PROMPTS
from dsl.expr.serialize import parse_sexpr
from dsl.expr.suite import build_suite
from eval.nl.guard import NOTATION_KINDS, GuardConfig, GuardResult, check_word_problem, notation_leaks
from eval.nl.models import deterministic_word_problem, parse_participant

STRICT = GuardConfig(strict=True)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# Each smuggles a tree ((+ A (* B C)) unless the text says otherwise) in a way the paper's regexes miss.
HIDDEN_OPERATORS = [
    "Start with {A}\u00a0+\u00a0{B}\u00a0*\u00a0{C} marbles.",  # NBSP
    "Start with {A}\u2009+\u2009{B}\u202f*\u202f{C} marbles.",  # thin and narrow no-break spaces
    "Start with {A}\u3000+\u3000{B}\u3000*\u3000{C} marbles.",  # ideographic space
    "Start with {A}\n+\n{B}\n*\n{C} marbles.",
    "Start with {A} +\r\n{B} *\r\n{C} marbles.",
    "Start with {A}\u2028+\u2029{B} * {C} marbles.",  # line and paragraph separators
    "Start with {A}\u200b+\u200b{B}\u200b*\u200b{C} marbles.",  # zero-width space
    "Start with {A}\u2060+\u2060{B}\ufeff*\ufeff{C} marbles.",  # word joiner, BOM
    "Start with {A}\u00ad/\u00ad{B} marbles.",  # soft hyphen
    "Start with {A}＋{B}＊{C} marbles.",  # fullwidth
    "Start with {A} plus {B} × {C} marbles.",
    "Start with {A} plus {B} ⋅ {C} marbles.",
    "Start with {A} plus {B} · {C} marbles.",
    "Start with {A} plus {B} ∗ {C} marbles.",
    "Start with {A} − {B} marbles.",  # the minus sign is never a hyphen
    "Start with {A} ➕ {B} ✖ {C} marbles.",
    "Share {A} ÷ {B} cakes.",
    "Share {A} ∕ {B} cakes.",
    "Share 3⁄4 of {A} cakes.",
    "Start with {A}⁺{B} marbles.",
    "Start with {A} &plus; {B} &times; {C} marbles.",
    "Start with {A} &#43; {B} &#x2A; {C} marbles.",
    "Start with { A } + { B } * { C } marbles.",  # spaces inside the placeholders
]
HIDDEN_PARENTHESES = ["Take （{B} and {C}） then {A}.", "Take [{B} and {C}] then {A}.", "Take ⟨{B} and {C}⟩ then {A}."]
NOTATION = {
    "latex": [
        "Each gets \\frac{{A}}{{B}} cakes.",
        "Start with {A} plus {B} \\cdot {C} marbles.",
        "Start with {A} plus {B} \\times {C} marbles.",
        "Start with $A - B$ marbles and {A}, {B}.",
        "The area is {A}^{2} square meters.",
        "Split \\left {A} and {B} \\right evenly.",
    ],
    "ast": [
        "[+ {A} [* {B} {C}]]",
        "( + { A } ( * { B } { C } ) )",
        "{+ {A} {* {B} {C}}}",
        "⟨+ {A} ⟨* {B} {C}⟩⟩",
        "Count (- 7 (/ 4 2)) pebbles.",
        "(plus 3 (times 4 5)) pebbles",
        '{"op": "+", "args": [{"var": "{A}"}, {"op": "*", "args": [{"var": "{B}"}, {"var": "{C}"}]}]}',
    ],
    "spelled": [
        "Open parenthesis, plus sign, {A}, open parenthesis, asterisk, {B}, {C}, close parenthesis, close paren.",
        "open bracket plus {A} open bracket times {B} {C} closing bracket closing bracket",
        "{A} plus (left parenthesis) {B} times {C} (right paren)",
        "{A} plus-sign {B} times sign {C}",
        "{A} forward slash {B}",
    ],
    "encoded": [
        f"Decode this: {b64('A + B * C')} and use {{A}}, {{B}}, {{C}}.",
        f"Decode this: {b64('(+ A (* B C))')} for {{A}}, {{B}}, {{C}}.",
        f"Decode this: {b64('{A} - {B}').rstrip('=')} please.",  # unpadded, minus: strict checks on payloads
        f"Code {base64.urlsafe_b64encode(b'A/B>>>?').decode()} for {{A}} and {{B}}.",  # URL-safe alphabet
        f"Hex: {b'A+B*C'.hex()} for {{A}}, {{B}}, {{C}}.",
        "Hex: 41 2b 42 2a 43 for {A}, {B}, {C}.",
        "Bytes \\x41\\x2b\\x42\\x2a\\x43 for {A}, {B}, {C}.",
        "Link {A}%2B{B}%2A{C} for the total.",
    ],
    "reversed": [
        "}C{ * }B{ + }A{",
        ")}C{ }B{ *( }A{ +(",
        "}B{}A{carf\\ teg hcaE",
        "sisehtnerap esolc }C{ }B{ ksiretsa",
    ],
}
SMUGGLED = HIDDEN_OPERATORS + HIDDEN_PARENTHESES + [text for texts in NOTATION.values() for text in texts]
HONEST = [
    "A baker bakes {A} trays of rolls and then {B} more trays. How many trays are there?",
    "**Word problem:** A farmer has {A} goats.\n\n* He buys {B} sheep.\n* He sells {C} of the animals.\n\nHow many?",
    "A shop sells {A} pens:\n- {B} are blue\n- the rest are red\nHow many red pens are there?",
    "Tom has {A} apples — he gives {B} to Ann — and then eats 2.",
    "A class of {A} pupils splits into {B} teams; each team gets 3 balls.",
    "In 2024 the club had {A} members, a well-known twenty-one-year-old among them.",
    "The store offers a 20% discount on {A} shirts that cost {B} dollars each.",
    "Each box (for example, the red one) holds {A} apples, and there are {B} boxes.",
    "A hiker walks {A}\u00a0km on Monday and {B}\u00a0km on Tuesday. How far did she walk?",
    "Sam earns $5 per hour and works {A} hours, then spends $3 on lunch.",
    "The train leaves at 10:30 and carries {A} passengers and {B} crew.",
    "She decided to decorate {A} cakes and deface none of the {B} posters.",
    "Afterwards, the remaining {A} books were packed into {B} boxes together.",
    "Use {A} eggs. Then take {B} times as many cups of flour.",
    "The bus carries {A} adults & {B} kids on the 5-mile trip.",
    "“{A} boxes,” she said, “and {B} more tomorrow.”",
    "An X-ray machine scans {A} bags per hour for {B} hours; the pupils open the window {C} times.",
    "A plus-size store stocks {A} coats and {B} hats.",
    "The {A} shelves need {B} left and right brackets each.",
]


def test_the_corpus_covers_every_disguise() -> None:
    assert len(set(SMUGGLED)) == len(SMUGGLED) >= 30
    assert set(NOTATION) == set(NOTATION_KINDS)


@pytest.mark.parametrize("config", [GuardConfig(), STRICT], ids=["default", "strict"])
@pytest.mark.parametrize("text", SMUGGLED)
def test_smuggled_leaks_are_rejected(text: str, config: GuardConfig) -> None:
    assert check_word_problem(text, [], config).verdict in ("leak", "paren_leak")


@pytest.mark.parametrize("text", HIDDEN_OPERATORS)
def test_hidden_operators_are_operator_leaks(text: str) -> None:
    result = check_word_problem(text, ["A"])
    assert result.operator_leak and not result.leak_pass and result.verdict == "leak"


@pytest.mark.parametrize("text", HIDDEN_PARENTHESES)
def test_hidden_parentheses_are_paren_leaks(text: str) -> None:
    assert check_word_problem(text, ["A", "B", "C"]).verdict == "paren_leak"


@pytest.mark.parametrize(("kind", "text"), [(kind, text) for kind, texts in NOTATION.items() for text in texts])
def test_notation_kinds(kind: str, text: str) -> None:
    assert kind in notation_leaks(text)
    result = check_word_problem(text, [])
    assert result.verdict == "leak" and kind in result.notation


def test_the_minus_sign_leaks_between_operands_by_default_and_anywhere_when_strict() -> None:
    negative = "The temperature falls from {A} degrees to −5 degrees."
    assert check_word_problem(negative, ["A"]).passed
    assert check_word_problem(negative, ["A"], STRICT).verdict == "leak"
    assert check_word_problem("{A} − {B} and 5 − 3", []).verdict == "leak"


def test_reversed_only_when_nothing_leaks_forwards() -> None:
    assert notation_leaks("{A} + {B}") == ()
    assert notation_leaks("}B{ + }A{") == ("reversed",)


def test_notation_kinds_are_closed() -> None:
    with pytest.raises(ValueError, match="notation"):
        GuardResult("leak", notation=("base64",))


@pytest.mark.parametrize("config", [GuardConfig(), STRICT], ids=["default", "strict"])
def test_honest_prose_passes(config: GuardConfig) -> None:
    failed = {text: check_word_problem(text, [], config) for text in HONEST}
    assert {text: result for text, result in failed.items() if not result.passed} == {}


def test_prompt_exemplars_pass_the_strict_guard() -> None:
    shots = [shot for prompts in PROMPTS.values() for shot in (*prompts.generator_pool, *prompts.extractor_pool)]
    assert shots
    assert all(check_word_problem(shot.word_problem, [], STRICT).passed for shot in shots)


def test_every_procedural_word_problem_of_the_suite_passes() -> None:
    """The 2,450 word problems the `procedural` generator writes for the default suite, default and strict guard."""
    procedural = parse_participant("procedural", "generator")
    rows = build_suite().rows
    assert len(rows) == 2450
    for row in rows:
        text = deterministic_word_problem(procedural, parse_sexpr(row["sexpr"]), "arithmetic", row["id"], 0)
        for config in (GuardConfig(), STRICT):
            assert check_word_problem(text, row["variables"], config) == GuardResult("pass"), text
