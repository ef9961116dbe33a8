"""Find the program in a model completion: code fences, the prompt's answer marker and its `###` end mark.

The official prompts ask for a program after "The Python program that generates the sequence is:" that ends with
`###`; models also wrap code in ``` fences, add prose, or run on past the end. Extraction never executes anything.
"""

from __future__ import annotations

import ast
import re
import textwrap

ANSWER_MARKER = "that generates the sequence is:"
END_MARK = "###"
_SPECIAL_ENDS = ("<|end_of_text|>", "<|eot_id|>", "<|im_end|>", "<|endoftext|>", "</s>")
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n(.*?)(?:```|\Z)", re.S)
_LANGUAGE_LINE = re.compile(r"\A\s*(?:python|py|python3)\s*\n", re.I)


def _cut_special(text: str) -> str:
    ends = [pos for token in _SPECIAL_ENDS if (pos := text.find(token)) >= 0]
    return text[: min(ends)] if ends else text


def _answer_region(text: str) -> str:
    """The text after the last answer marker (the CoT prompt puts a thought before it), else `text` itself."""
    pos = text.lower().rfind(ANSWER_MARKER)
    return text[pos + len(ANSWER_MARKER) :] if pos >= 0 else text


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _clean(text: str) -> str | None:
    """A piece of text as code: cut at `###`, language tag line dropped, dedented; None when it is prose."""
    code = _LANGUAGE_LINE.sub("", text.split(END_MARK)[0], count=1)
    code = textwrap.dedent(code.strip("\n")).strip()
    return code if code and ("=" in code or _parses(code)) else None  # prose: no assignment and not Python either


def _code_in(text: str) -> str | None:
    """The code of one region: its last fenced block of code that mentions `output` (else its last fenced block of
    code), or, without fences, the text before the first `###`."""
    blocks = _FENCE.findall(text)
    if not blocks:
        return _clean(text)
    codes = [code for block in blocks if (code := _clean(block)) is not None]
    with_output = [code for code in codes if "output" in code]
    return (with_output or codes or [None])[-1]


def extract_code(completion: str | None) -> str | None:
    """The program text of a completion, or None when there is none.

    First the answer region (after the last answer marker), then, when that holds no code (a model may repeat the
    marker after its program), the whole completion. A leading language tag line (`python`) is dropped.
    """
    if not completion:
        return None
    text = _cut_special(completion)
    region = _answer_region(text)
    return _code_in(region) or (_code_in(text) if region is not text else None)


__all__ = ["ANSWER_MARKER", "END_MARK", "extract_code"]
