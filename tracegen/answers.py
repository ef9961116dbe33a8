"""Read the answer of an RTCE completion: the one reader of the `[ANSWER]` format (`tracegen.translate.answer_block`
writes it), for the translation filter and every RTCE score (`eval.rtce`, the RTCE rewards).

The prompt asks the model to answer as ``[ANSWER]{"output": <value>}[/ANSWER]``. Completions are messy, so the
rules are:

1. Region: the text after the LAST ``[ANSWER]`` tag, up to the next ``[/ANSWER]`` (or to the end of the text when
   that tag has no closing tag). Without any ``[ANSWER]`` tag the whole text is the region. Earlier blocks are never
   consulted, even when the last one holds no valid answer.
2. Markdown code fences (a line holding only ```` ``` ```` or ```` ```json ```` etc.) are removed from the region.
   Only whole fence lines are removed, so backticks inside a JSON string value are kept.
3. Starting at each ``{`` that lies within the first 20,000 characters of the region, ``json.JSONDecoder.raw_decode``
   is tried; the first decoded JSON object holding the key ``"output"`` gives the answer. Objects without that key
   are skipped and the search goes on (at the next ``{``, which may lie inside the skipped object).
4. The answer is ``obj["output"]``; ``{"output": {"return": x}}`` (a dict whose only key is ``"return"``) is
   flattened to ``x``.
5. Nothing else is accepted: a bare JSON value (``[ANSWER]5[/ANSWER]``) or an object without ``"output"`` gives
   ``(False, None)``. Nothing is ever evaluated as Python, and no input string makes the extraction raise.

Tags are plain text: a ``[ANSWER]`` or ``[/ANSWER]`` inside a JSON string value is still taken as a tag.

``extract_answer`` returns ``(found, value)``; ``(True, None)`` means the model answered ``null``. With
``closed_block=True`` (a narration checked before it becomes SFT data, which must teach the format) only a closed
``[ANSWER]...[/ANSWER]`` block counts: no tag, or a last ``[ANSWER]`` without its ``[/ANSWER]``, gives
``(False, None)``.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["MAX_START", "extract_answer"]

OPEN_TAG = "[ANSWER]"
CLOSE_TAG = "[/ANSWER]"
MAX_START = 20_000  # a JSON object must start within this many characters of the answer region
_FENCE_LINE = re.compile(r"^[ \t]*`{3,}[\w+.#-]*[ \t]*\r?$", re.MULTILINE)
_DECODER = json.JSONDecoder()


def answer_region(text: str) -> str:
    """The text of the last ``[ANSWER]`` block, or the whole text when there is no ``[ANSWER]`` tag."""
    start = text.rfind(OPEN_TAG)
    if start < 0:
        return text
    region = text[start + len(OPEN_TAG) :]
    end = region.find(CLOSE_TAG)
    return region if end < 0 else region[:end]


def strip_code_fences(text: str) -> str:
    """Remove Markdown code fence lines (```` ``` ```` with an optional language tag)."""
    return _FENCE_LINE.sub("", text)


def find_output_object(text: str, max_start: int = MAX_START) -> dict[str, Any] | None:
    """The first JSON object with an ``"output"`` key starting within ``max_start`` characters, else None."""
    pos = text.find("{")
    while 0 <= pos < max_start:
        try:
            obj, _ = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict) and "output" in obj:
            return obj
        pos = text.find("{", pos + 1)
    return None


def _flatten(value: Any) -> Any:
    """``{"return": x}`` -> ``x``; anything else unchanged."""
    if isinstance(value, dict) and len(value) == 1 and "return" in value:
        return value["return"]
    return value


def extract_answer(text: str, *, closed_block: bool = False) -> tuple[bool, Any]:
    """Return ``(found, value)`` for a completion, following the module rules; never raises on a string."""
    if not isinstance(text, str):
        return False, None
    if closed_block and (OPEN_TAG not in text or CLOSE_TAG not in text[text.rfind(OPEN_TAG) :]):
        return False, None
    obj = find_output_object(strip_code_fences(answer_region(text)))
    if obj is None:
        return False, None
    return True, _flatten(obj["output"])
