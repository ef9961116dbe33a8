"""R_math: the lexicon's contents and the word fraction on hand-counted texts."""

from __future__ import annotations

import pytest

from eval.nl.lexicon import ARITHMETIC_LEXICON, r_math


def test_lexicon_is_lower_case_words_of_the_expected_size() -> None:
    assert 80 <= len(ARITHMETIC_LEXICON) <= 150
    assert all(word.isalpha() and word.islower() for word in ARITHMETIC_LEXICON)
    required = "add plus sum total minus subtract difference remaining times product each per twice half divide split"
    assert set(required.split()) <= ARITHMETIC_LEXICON
    assert not {"how", "many", "number", "the", "apples"} & ARITHMETIC_LEXICON


def test_r_math_counts_lexicon_words_over_all_words() -> None:
    # words: add to the apples then split the total equally -> add, then, split, total, equally = 5 of 9
    assert r_math("Add {A} to the apples, then split the total equally.") == pytest.approx(5 / 9)
    assert r_math("The cat sat on the mat.") == 0.0
    assert r_math("TWICE Each PER") == 1.0


def test_placeholders_are_not_words() -> None:
    assert r_math("{A} plus {B}") == 1.0
    assert r_math("{Apples} and {B}") == 0.0


@pytest.mark.parametrize("text", ["", "   ", "{A} {B}", "3 + 4 = 7"])
def test_no_words_gives_zero(text: str) -> None:
    assert r_math(text) == 0.0
