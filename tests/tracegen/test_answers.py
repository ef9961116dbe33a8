"""Answer extraction from messy RTCE completions."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tracegen.answers import MAX_START, extract_answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[ANSWER]{"output": 5}[/ANSWER]', 5),
        ('[ANSWER]{"output": 2.5}[/ANSWER]', 2.5),
        ('[ANSWER]{"output": "abc"}[/ANSWER]', "abc"),
        ('[ANSWER]{"output": [1, [2, 3], []]}[/ANSWER]', [1, [2, 3], []]),
        ('[ANSWER]{"output": {"a": 1, "b": [2]}}[/ANSWER]', {"a": 1, "b": [2]}),
        ('[ANSWER] {"output": true} [/ANSWER]', True),
        ('[ANSWER]\n{\n  "output": [1,\n    2]\n}\n[/ANSWER]', [1, 2]),
    ],
)
def test_well_formed(text: str, expected) -> None:
    assert extract_answer(text) == (True, expected)


def test_null_output_is_found() -> None:
    assert extract_answer('[ANSWER]{"output": null}[/ANSWER]') == (True, None)


def test_code_fences() -> None:
    text = 'Let me think.\n[ANSWER]\n```json\n{"output": [3, 4]}\n```\n[/ANSWER]'
    assert extract_answer(text) == (True, [3, 4])
    assert extract_answer('[ANSWER]```\n{"output": "x"}\n```[/ANSWER]') == (True, "x")
    assert extract_answer('```json\n{"output": 7}\n```') == (True, 7)


def test_fence_between_tokens_is_removed() -> None:
    assert extract_answer('[ANSWER]{"output":\n```\n[1, 2]\n```\n}[/ANSWER]') == (True, [1, 2])


def test_backticks_inside_a_string_are_kept() -> None:
    assert extract_answer('[ANSWER]{"output": "a```b"}[/ANSWER]') == (True, "a```b")


def test_nested_json_inside_output() -> None:
    value = {"codes": [[65, 1], [66, 2]], "table": {"A": {"output": 0}}, "s": "{}"}
    assert extract_answer(f"[ANSWER]{json.dumps({'output': value})}[/ANSWER]") == (True, value)


def test_missing_closing_tag() -> None:
    assert extract_answer('reasoning...\n[ANSWER]{"output": [1, 2, 3]}') == (True, [1, 2, 3])
    assert extract_answer('[ANSWER]{"output": [1, 2, 3]} and then the model keeps talking {"x": 1}') == (
        True,
        [1, 2, 3],
    )


def test_trailing_prose() -> None:
    text = '[ANSWER]{"output": 42}[/ANSWER]\n\nI hope this helps! Note that {"output": 0} would be wrong.'
    assert extract_answer(text) == (True, 42)


def test_prose_inside_block() -> None:
    assert extract_answer('[ANSWER]The output is {"output": "ok"} as computed.[/ANSWER]') == (True, "ok")


def test_last_block_wins() -> None:
    text = '[ANSWER]{"output": 1}[/ANSWER] wait, let me redo it [ANSWER]{"output": 2}[/ANSWER] done'
    assert extract_answer(text) == (True, 2)
    text = '[ANSWER]{"output": 1}[/ANSWER] actually [ANSWER]{"output": 3}'
    assert extract_answer(text) == (True, 3)


def test_invalid_last_block_does_not_fall_back() -> None:
    assert extract_answer('[ANSWER]{"output": [1, 2[/ANSWER]') == (False, None)
    assert extract_answer('[ANSWER]{"output": 1}[/ANSWER]\n[ANSWER]{"output": oops}') == (False, None)
    assert extract_answer("[ANSWER]") == (False, None)
    assert extract_answer("[ANSWER][/ANSWER]") == (False, None)


def test_no_tags() -> None:
    assert extract_answer('The function returns {"output": [0, 1, 2]}.') == (True, [0, 1, 2])
    assert extract_answer("The function returns [0, 1, 2].") == (False, None)
    assert extract_answer("") == (False, None)


def test_objects_without_output_are_skipped() -> None:
    text = '[ANSWER]{"input": "abc"} gives {"output": "a1b1c1"}[/ANSWER]'
    assert extract_answer(text) == (True, "a1b1c1")
    assert extract_answer('[ANSWER]{"result": 5}[/ANSWER]') == (False, None)
    assert extract_answer('{"a": 1} {"b": 2}') == (False, None)


def test_bare_values_are_rejected() -> None:
    for text in ("[ANSWER]5[/ANSWER]", "[ANSWER][1, 2][/ANSWER]", '[ANSWER]"out"[/ANSWER]', "[ANSWER]null[/ANSWER]"):
        assert extract_answer(text) == (False, None), text


def test_return_flattening() -> None:
    assert extract_answer('[ANSWER]{"output": {"return": 5}}[/ANSWER]') == (True, 5)
    assert extract_answer('[ANSWER]{"output": {"return": [1, {"return": 2}]}}[/ANSWER]') == (
        True,
        [1, {"return": 2}],
    )
    # Only a dict whose single key is "return" is flattened.
    assert extract_answer('[ANSWER]{"output": {"return": 5, "x": 1}}[/ANSWER]') == (True, {"return": 5, "x": 1})
    assert extract_answer('[ANSWER]{"output": {}}[/ANSWER]') == (True, {})


def test_strings_with_braces_and_escaped_quotes() -> None:
    value = 'a}b{c "q" \\ {"output": 9}'
    assert extract_answer("[ANSWER]" + json.dumps({"output": value}) + "[/ANSWER]") == (True, value)
    assert extract_answer(r'[ANSWER]{"output": "}\"{"}[/ANSWER]') == (True, '}"{')


def test_invalid_json_and_python_literals() -> None:
    assert extract_answer("[ANSWER]{'output': 5}[/ANSWER]") == (False, None)
    assert extract_answer('[ANSWER]{"output": (1, 2)}[/ANSWER]') == (False, None)
    assert extract_answer('[ANSWER]{"output": __import__("os").getcwd()}[/ANSWER]') == (False, None)


def test_long_garbage_prefix() -> None:
    garbage = ("x{y}[z] " * 6250)[:50_000]
    assert len(garbage) == 50_000
    assert extract_answer(garbage + '[ANSWER]{"output": [1, 2]}[/ANSWER]') == (True, [1, 2])
    # Without tags the object must start within the first MAX_START characters of the text.
    assert extract_answer(garbage + '{"output": [1, 2]}') == (False, None)
    assert extract_answer("x" * (MAX_START - 1) + '{"output": 1}') == (True, 1)
    assert extract_answer("x" * MAX_START + '{"output": 1}') == (False, None)


def test_pathological_nesting_does_not_raise() -> None:
    assert extract_answer("[ANSWER]" + "{" * 50_000) == (False, None)
    assert extract_answer('[ANSWER]{"output": ' + "[" * 100_000 + "]" * 100_000 + "}") == (False, None)
    assert extract_answer('[ANSWER]{"output": 1' + "0" * 10_000 + "}") == (False, None)


def test_non_string_input() -> None:
    assert extract_answer(None) == (False, None)  # type: ignore[arg-type]


_PIECES = st.sampled_from(
    [
        "[ANSWER]",
        "[/ANSWER]",
        "```",
        "```json\n",
        "{",
        "}",
        "[",
        "]",
        '"',
        "\\",
        ":",
        ",",
        '"output"',
        '"return"',
        "null",
        "1e999",
        "NaN",
        "-",
        "0",
        "\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=40).map("".join)))
@example('[ANSWER]{"output": {"return": ' + "[" * 5000)
@example("{" * 30_000)
def test_fuzz_never_raises(text: str) -> None:
    found, value = extract_answer(text)
    assert isinstance(found, bool)
    if not found:
        assert value is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=json_values, prefix=st.text(max_size=50), suffix=st.text(max_size=50))
def test_round_trip_of_any_json_value(value, prefix: str, suffix: str) -> None:
    answer = json.dumps({"output": value})
    assume("[ANSWER]" not in answer + suffix and "[/ANSWER]" not in answer)  # tags are not escaped inside strings
    found, got = extract_answer(f"{prefix}[ANSWER]{answer}[/ANSWER]{suffix}")
    expected = value["return"] if isinstance(value, dict) and list(value) == ["return"] else value
    assert found and got == expected
