"""RTCE scores: exact match, canonical JSON, edit similarity and pass@k."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval.metrics import any_of_first_k, canonical_json, edit_similarity, exact_match, pass_at_k


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        (1, 1, True),
        (1, 2, False),
        (10**30, 10**30 + 1, False),  # ints compare exactly, however large
        (1, 1.0, True),
        (1.0, 1, True),
        (0.1 + 0.2, 0.3, True),
        (1.0, 1.01, False),
        (1.0, 1.0009, True),
        (0.0, 0.0009, True),  # abs_tol
        (1000.0, 1000.9, True),  # rel_tol
        (1000.0, 1002.0, False),
        (float("inf"), float("inf"), True),
        (10**400, 1.0, False),  # too large for a float
        (" ABC ", "abc", True),
        ("Straße", "STRASSE", True),  # casefold
        ("a b", "ab", False),
        ("1", 1, False),
        ([1, [2, "x"]], (1, [2, "X"]), True),
        ([1, 2], [1, 2, 3], False),
        ([1.0, 2], [1, 2.0], True),
        ([], (), True),
        ({"a": 1, "b": [1.0]}, {"b": [1], "a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": 1}, {"A": 1}, False),
        ({"a": " X"}, {"a": "x"}, True),
        ({"a": 1}, [["a", 1]], False),
        (True, 1, False),
        (1, True, False),
        (False, 0.0, False),
        (True, True, True),
        (False, True, False),
        (None, None, True),
        (None, 0, False),
        (0, None, False),
        (None, "", False),
        (None, [], False),
    ],
)
def test_exact_match(prediction, reference, expected: bool) -> None:
    assert exact_match(prediction, reference) is expected


def test_exact_match_other_types_use_eq() -> None:
    assert exact_match(b"ab", b"ab") and not exact_match(b"ab", "ab")
    assert exact_match({1, 2}, {2, 1})


def test_exact_match_when_eq_raises() -> None:
    class Ambiguous:
        def __eq__(self, other):
            raise ValueError("ambiguous")

        __hash__ = object.__hash__

    assert exact_match(Ambiguous(), Ambiguous()) is False


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_exact_match_is_reflexive(value) -> None:
    assert exact_match(value, value)
    assert edit_similarity(value, value) == 1.0


def test_canonical_json() -> None:
    assert canonical_json({"b": [1, 2.5], "a": "é"}) == '{"a":"é","b":[1,2.5]}'
    assert canonical_json((1, None, True)) == "[1,null,true]"
    assert canonical_json("abc") == '"abc"'
    assert canonical_json({1, 2}) == repr({1, 2})  # not JSON: repr
    assert canonical_json({1: "a", "b": 2}) == repr({1: "a", "b": 2})  # keys cannot be sorted
    loop: list = []
    loop.append(loop)
    assert canonical_json(loop) == "[[...]]"


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("abc", "abc", 1.0),
        ("abc", "abd", 1 - 1 / 5),  # '"abc"' vs '"abd"': one substitution, length 5
        ([1, 2, 3], [1, 2, 4], 1 - 1 / 7),  # '[1,2,3]' vs '[1,2,4]'
        ([1, 2], [1, 2, 3], 1 - 2 / 7),  # '[1,2]' vs '[1,2,3]': two insertions
        (12, 34, 0.0),  # '12' vs '34'
        ({"b": 1, "a": 2}, {"a": 2, "b": 1}, 1.0),  # key order does not matter
        ((1, 2), [1, 2], 1.0),
        (1, "1", 1 - 2 / 3),  # '1' vs '"1"'
    ],
)
def test_edit_similarity(prediction, reference, expected: float) -> None:
    assert edit_similarity(prediction, reference) == pytest.approx(expected)


@settings(max_examples=100, deadline=None)
@given(json_values, json_values)
def test_edit_similarity_in_unit_interval_and_symmetric(a, b) -> None:
    s = edit_similarity(a, b)
    assert isinstance(s, float) and 0.0 <= s <= 1.0
    assert s == pytest.approx(edit_similarity(b, a))


def test_pass_at_k_matches_combinatorial_formula() -> None:
    cases = 0
    for n in range(11):
        for c in range(n + 1):
            for k in range(1, n + 1):
                expected = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12), (n, c, k)
                cases += 1
    assert cases == 440


def test_pass_at_k_edge_values() -> None:
    assert pass_at_k(10, 0, 5) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 6, 5) == 1.0  # fewer than k wrong samples
    assert pass_at_k(5, 2, 0) == 0.0
    assert pass_at_k(1000, 1, 1000) == 1.0
    assert pass_at_k(2000, 3, 10) == pytest.approx(1 - math.comb(1997, 10) / math.comb(2000, 10), rel=1e-9)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 1, 6), (5, 6, 1), (-1, 0, 0), (5, -1, 1), (5, 1, -1), (0, 0, 1)])
def test_pass_at_k_errors(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_any_of_first_k() -> None:
    correct = [False, False, True, False]
    assert [any_of_first_k(correct, k) for k in range(5)] == [False, False, False, True, True]
    assert any_of_first_k((True,), 1)
    assert not any_of_first_k([], 0)
    with pytest.raises(ValueError):
        any_of_first_k(correct, 5)
    with pytest.raises(ValueError):
        any_of_first_k(correct, -1)
