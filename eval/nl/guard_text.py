"""What the leakage guard reads: a word problem normalized, and the payloads encoded in it.

`normalize_text` undoes the disguises that let notation slip past character-level regexes: HTML entities
(``&plus;``), compatibility forms (NFKC: fullwidth ``＋＊（）``, superscript signs, NBSP), invisible format characters
(Unicode category Cf: zero-width spaces and joiners, soft hyphens) removed, every other space or line break (``\\s``,
categories Zs, Zl, Zp) made a plain space, markdown bullets at line starts dropped (so a list does not read as
``* {B}`` after the previous line), spaces inside placeholders dropped (``{ A }`` -> ``{A}``), operator look-alikes
made ASCII (``× · ⋅ ∗`` -> ``*``, ``÷ ∕ ⁄`` -> ``/``, ``– ‒`` -> ``-``), and square and other brackets made
parentheses. Minus signs (``−``, ``➖``; NFKC turns ``⁻`` into ``−``) become U+2212 ``−``, not ``-``: unlike the
hyphen they never occur in prose, so the guard counts them as operators in every mode.

`decoded_payloads` decodes what looks like base64, hex or percent-encoding into printable text, normalized.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata
import urllib.parse
from functools import lru_cache

from dsl.expr.prompts import VARIABLE_NAME

MINUS_SIGN = "−"
LOOKALIKES: dict[str, str] = (
    dict.fromkeys("×✕✖⨉⨯∗⋅·∙", "*")
    | dict.fromkeys("÷∕⁄⧸➗", "/")
    | dict.fromkeys("∔➕", "+")
    | dict.fromkeys("‐‒–", "-")
    | dict.fromkeys("−➖", MINUS_SIGN)
    | dict.fromkeys("[⟨〈⟦⦅〔", "(")
    | dict.fromkeys("]⟩〉⟧⦆〕", ")")
)
"""Operator and bracket look-alikes left after NFKC, and what the guard reads instead."""

_BULLET = re.compile(r"^[ \t]*[*•‣∙·⋅-][ \t]+", re.MULTILINE)
_SPACED_PLACEHOLDER = re.compile(rf"\{{\s*({VARIABLE_NAME})\s*\}}")
_BASE64 = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/_-]{8,}={0,2}")
_URLSAFE = str.maketrans("-_", "+/")
_HEX = re.compile(r"(?<![0-9A-Za-z])(?:\\x|0x)?[0-9A-Fa-f]{2}(?:[ :]?(?:\\x|0x)?[0-9A-Fa-f]{2}){2,}(?![0-9A-Za-z])")
_HEX_SEPARATORS = re.compile(r"\\x|0x|[ :]")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")


class _CharacterMap(dict[int, str | None]):
    """A `str.translate` table filled on first sight of each character: look-alikes to ASCII, format characters
    removed, spaces and line breaks to a plain space, anything else kept."""

    def __missing__(self, code: int) -> str | None:
        char = chr(code)
        category = unicodedata.category(char)
        if char in LOOKALIKES:
            value: str | None = LOOKALIKES[char]
        elif category == "Cf":
            value = None
        elif char.isspace() or category in ("Zs", "Zl", "Zp"):
            value = " "
        else:
            value = char
        self[code] = value
        return value


_CHARACTERS = _CharacterMap()


@lru_cache(maxsize=4096)
def normalize_text(text: str) -> str:
    """The text as the guard reads it (see the module docstring): one line, ASCII operators and parentheses."""
    compatible = unicodedata.normalize("NFKC", html.unescape(text))
    one_line = _BULLET.sub("", compatible).translate(_CHARACTERS)
    return _SPACED_PLACEHOLDER.sub(r"{\1}", one_line)


def _printable(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    visible = "".join(text.split())
    return text if visible and visible.isprintable() else None


def _base64(token: str) -> bytes | None:
    body = token.rstrip("=").translate(_URLSAFE)
    if len(body) % 4 == 1:
        return None
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except binascii.Error:
        return None


def _encoded(text: str) -> list[bytes]:
    """The bytes of every base64 token, hex run and percent-encoded text in `text` (undecodable ones skipped)."""
    found = [_base64(match.group()) for match in _BASE64.finditer(text)]
    found += [bytes.fromhex(_HEX_SEPARATORS.sub("", match.group())) for match in _HEX.finditer(text)]
    if _PERCENT.search(text):
        found.append(urllib.parse.unquote_to_bytes(text))
    return [data for data in found if data is not None]


def decoded_payloads(text: str) -> list[str]:
    """Printable texts hidden in `text` as base64 (standard or URL-safe, padding optional), hex (``412b42``,
    ``41 2b 42``, ``\\x41\\x2b``) or percent-encoding (``%2B``), each normalized."""
    decoded = (_printable(data) for data in _encoded(text))
    return [normalize_text(payload) for payload in decoded if payload is not None]


__all__ = ["LOOKALIKES", "MINUS_SIGN", "decoded_payloads", "normalize_text"]
