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
    """The text after the last answer marker (the CoT prompt puts a thought before it), else all of it."""
    pos = text.lower().rfind(ANSWER_MARKER)
    return text[pos + len(ANSWER_MARKER) :] if pos >= 0 else text


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def extract_code(completion: str | None) -> str | None:
    """The program text of a completion, or None when there is none.

    In the answer region: the last fenced block that mentions `output` (else the last fenced block), or, without
    fences, the text before the first `###`. A leading language tag line (`python`) is dropped. Text with no
    assignment that does not parse as Python either is prose: no code.
    """
    if not completion:
        return None
    region = _answer_region(_cut_special(completion))
    blocks = _FENCE.findall(region)
    if blocks:
        with_output = [b for b in blocks if "output" in b]
        code = (with_output or blocks)[-1]
    else:
        code = region
    code = _LANGUAGE_LINE.sub("", code.split(END_MARK)[0], count=1)
    code = textwrap.dedent(code.strip("\n")).strip()
    return code if code and ("=" in code or _parses(code)) else None  # prose: no assignment and not Python either


__all__ = ["ANSWER_MARKER", "END_MARK", "extract_code"]
