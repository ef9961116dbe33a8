"""What the guard reads: normalized text and decoded payloads."""

from __future__ import annotations

import base64

import pytest

from eval.nl.guard_text import MINUS_SIGN, decoded_payloads, normalize_text


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("{A}\u00a0+\u2009{B}", "{A} + {B}"),
        ("{A}\u200b*\u2060{B}\ufeff", "{A}*{B}"),
        ("{A}\n+\r\n{B}\t*\u2028{C}", "{A} +  {B} * {C}"),
        ("{A}＋{B}＊（{C}）", "{A}+{B}*({C})"),
        ("A × B ÷ C ∕ D ⋅ E · F ∗ G", "A * B / C / D * E * F * G"),
        ("A − B – C ➖ D", f"A {MINUS_SIGN} B - C {MINUS_SIGN} D"),
        ("A⁻B", f"A{MINUS_SIGN}B"),
        ("[A] ⟨B⟩ 〔C〕", "(A) (B) (C)"),
        ("{ A } and {\u00a0B\u200b}", "{A} and {B}"),
        ("A &plus; B &times; C &#47; D", "A + B * C / D"),
        ("Costs:\n* {A} apples\n- {B} pears\n• 3 plums", "Costs: {A} apples {B} pears 3 plums"),
        ("Tom has {A} apples — twenty-one.", "Tom has {A} apples — twenty-one."),
    ],
)
def test_normalize_text(text: str, normalized: str) -> None:
    assert normalize_text(text) == normalized


@pytest.mark.parametrize(
    ("text", "payload"),
    [
        (f"see {base64.b64encode(b'A + B * C').decode()} now", "A + B * C"),
        (f"see {base64.b64encode(b'A - B - C').decode().rstrip('=')} now", "A - B - C"),
        (f"see {base64.b64encode(b'A + B' + bytes([10])).decode()} now", "A + B "),
        ("hex 412b422a43 here", "A+B*C"),
        ("hex 41 2b 42 here", "A+B"),
        ("hex 41:2b:42 here", "A+B"),
        ("bytes \\x41\\x2b\\x42 here", "A+B"),
        ("{A}%2B{B}", "{A}+{B}"),
    ],
)
def test_decoded_payloads(text: str, payload: str) -> None:
    assert payload in decoded_payloads(normalize_text(text))


def test_prose_decodes_to_nothing_printable() -> None:
    prose = "Afterwards the remaining decade of deface accede together everything 123456 in 2024 at 10:30"
    assert decoded_payloads(normalize_text(prose)) == []
