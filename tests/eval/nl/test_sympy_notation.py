"""SymPy-notation answers: powers as products, implicit products, and everything else refused without running it."""

from __future__ import annotations

import pytest

from dsl.expr.serialize import ARITHMETIC, parse_infix
from eval.nl.sympy_notation import MAX_EXPONENT, parse_sympy_notation


@pytest.mark.parametrize(
    ("text", "infix"),
    [
        ("D**2", "D * D"),
        ("D^2", "D * D"),
        ("D²", "D * D"),
        ("D³", "D * D * D"),
        ("D^-1", "1 / D"),
        ("D⁻²", "1 / (D * D)"),
        ("D^0", "1"),
        ("2A", "2 * A"),
        ("2(A + B)", "2 * (A + B)"),
        ("AB^2", "A * (B * B)"),
        ("A(B + C)^2", "A * ((B + C) * (B + C))"),
        ("[A + B]^2", "(A + B) * (A + B)"),
        ("-D^2", "-(D * D)"),
        ("3 × D² ÷ E", "3 * (D * D) / E"),
    ],
)
def test_trees(text: str, infix: str) -> None:
    assert parse_sympy_notation(text) == parse_infix(infix, ARITHMETIC)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("A^B", "not an integer"),
        ("A^2^3", "not an integer"),
        (f"A^{MAX_EXPONENT + 1}", "beyond"),
        ("x^2", "characters"),
        ("2.5A", "characters"),
        ("A^2 # B", "characters"),
        ("__import__('os')", "characters"),
        ("2 3^2", "side by side"),
        ("0123^2", "leading zero"),
        ("1E5", "not arithmetic"),
        ("A // B", "not arithmetic"),
        ("(A + B", "SymPy reads"),
        ("A +", "SymPy reads"),
        (")A(", "SymPy reads"),
    ],
)
def test_refusals(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_sympy_notation(text)
