"""Prompts for the KT evaluation: the paper's zero-shot and CoT prompts (Fig. 9 and 10) for Python programs, and the
SeqCoder prompt (`dsl.seqcoder`, the one the models were trained with) for DSL programs.

The paper's prompts are a system message plus a user message; our generation backends send one user message, so the
system text opens it (as in the official release's saved prompts).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from dsl.seqcoder import seqcoder_prompt

PromptStyle = Literal["zero-shot", "cot"]

SYSTEM = (
    "Generate a Python program that, when executed, reproduces a specified input sequence. "
    "The program should be as concise as possible."
)
_INSTRUCTIONS = """### Instructions:
- Write a multi-line Python program. Each line should either assign a new variable or define a new function. \
These variables and functions can be reused throughout the program.
- Identify and utilize patterns in the input sequence to minimize the length of the program.
- Assign the final output of the sequence to the variable `output`. This output will be used to verify the \
correctness of the program. Do not include print statements or return statements.
- Ensure that the generated code is executable in a Python interpreter without modifications. Do not include the \
`python` code block syntax in your response.
- End your response with `###`."""
_COT_INSTRUCTION = """
- Before the program, you can use the Thought field to generate how you think the task should be solved. After the \
thought, generate "\\nThe Python program that generates the sequence is:\\n", followed by the program."""
ZERO_SHOT = f"""{SYSTEM}
{_INSTRUCTIONS}

### Input Sequence:
{{sequence}}

### Expected Output:
The Python program that generates the sequence is:"""
COT = f"""{SYSTEM}
{_INSTRUCTIONS}{_COT_INSTRUCTION}

### Input Sequence:
{{sequence}}

### Thought:"""


def python_prompt(sequence: Sequence[int], style: PromptStyle = "zero-shot") -> str:
    """The paper's prompt for a sequence, written as a Python list."""
    if style not in ("zero-shot", "cot"):
        raise ValueError(f"prompt style must be 'zero-shot' or 'cot', got {style!r}")
    template = ZERO_SHOT if style == "zero-shot" else COT
    return template.format(sequence=str([int(v) for v in sequence]))


def kt_prompt(sequence: Sequence[int], mode: Literal["dsl", "python"], style: PromptStyle = "zero-shot") -> str:
    """The prompt for a sequence in an evaluation mode (DSL: the SeqCoder prompt, zero-shot only)."""
    if mode == "dsl":
        if style != "zero-shot":
            raise ValueError("DSL mode has the SeqCoder prompt only (--prompt zero-shot)")
        return seqcoder_prompt(sequence)
    return python_prompt(sequence, style)


__all__ = ["COT", "SYSTEM", "ZERO_SHOT", "PromptStyle", "kt_prompt", "python_prompt"]
