"""The RTCE prompts as the paper and its release frame them (Appendix F): one generic worked example, no same-task
demonstration.

Each prompt is an instruction, one worked example on a small unrelated function (its I/O requirements, the given
value, the function, the question, a step-by-step `[THOUGHT]` and the `[ANSWER]`), then the query: the typed I/O
requirements of the shown `main_solution`, the given value as a Python literal, the function, for the two inversion
tasks the instruction to derive `main_solution_inverse`, and the answer's type. The release's system message goes
with every prompt (`SYSTEM_MESSAGE`).

Styles (`PROMPT_STYLES`):
- `paper`: the above, with the listings as they are.
- `release-blind`: the release's `--blind` variant. I/O requirements name no algorithm, and the listing's
  identifiers are renamed (the parameter to `x`, every local to a short name: `blind_source`), so the model cannot
  recall the algorithm by its name.
- `demo`: kt-train's earlier format, a worked example of the same algorithm and task (`tracegen.tasks`).
- `release` (`kt rtce build --release-dir` only): the release's own prompts, rendered by the release's code from the
  checkout at build time (`tracegen.release_prompts`); `paper` is our rendering of the same framing.
"""

from __future__ import annotations

import io
import keyword
import tokenize
from typing import Any, Literal

from tracegen.algorithms.base import Algorithm

PromptStyle = Literal["paper", "release-blind", "demo", "release"]
PROMPT_STYLES: tuple[str, ...] = ("paper", "release-blind", "demo")
"""The styles rendered here, for any inputs."""
BUILD_PROMPT_STYLES: tuple[str, ...] = (*PROMPT_STYLES, "release")
"""With `release`: the release's own prompts, rendered by its code at build time (`tracegen.release_prompts`)."""
SYSTEM_MESSAGE = (
    "You are a helpful programming assistant designed to execute code. You must verify your own output via a "
    "round\u2011trip check and self\u2011correct before returning the final JSON."
)
"""The release's system message (`src/data/build_codeio_msg.py`), sent with every `paper` / `release-blind` prompt."""

_FORWARD_INSTRUCTION = (
    "You are given a Python function and an input to the function. Complete with a literal (no unsimplified "
    "expressions, no function calls) holding the output of the provided code on the given input, even if the function "
    "is incorrect or incomplete. Do NOT output any extra information. Execute the program step by step before "
    "arriving at an answer, and give the output in [ANSWER] and [/ANSWER] tags, following the example."
)
_BACKWARD_INSTRUCTION = (
    "You are given a Python function and an output of the function. Predict a feasible input that produces the given "
    "output when the provided code runs on it, even if the function is incorrect or incomplete. Do NOT output any "
    "extra information. Execute the program step by step before arriving at an answer, and give a feasible input in "
    "[ANSWER] and [/ANSWER] tags, following the example."
)
_EXAMPLE_SOURCE = """\
def main_solution(word):
    letters = list(word)
    letters.reverse()
    return ''.join(letters) + str(len(word))
"""
_EXAMPLE_IO = (
    "Input:\n  `word` (str): The word to mirror.\n\n"
    "Output:\n  `return` (str): The word's letters in reverse order, followed by its length."
)
_FORWARD_THOUGHT = """\
Let's execute the code step by step:
1. `main_solution` is called with word = "abc".
2. `letters = list(word)` gives ['a', 'b', 'c'].
3. `letters.reverse()` reverses it in place: ['c', 'b', 'a'].
4. `''.join(letters)` is "cba" and `str(len(word))` is "3".
5. The function returns "cba" + "3" = "cba3"."""
_BACKWARD_THOUGHT = """\
Let's work backwards from the output:
1. The function returns the reversed letters of `word` followed by `len(word)`.
2. The output "cba3" ends with the digit 3, so `word` has 3 letters and its reversed letters are "cba".
3. Reversing "cba" gives "abc".
4. Check: main_solution("abc") returns "cba3"."""
_ASK_OUTPUT = (
    "Can you predict the output without writing any code? Do not include any explanations, reasoning, or extra text. "
    'Put your final answer in the following json format: {"output": <your output>}, where <your output> should '
    "strictly match the output requirement as specified."
)
_ASK_INPUT = (
    "Can you predict a feasible input without writing any code? Do not include any explanations, reasoning, or extra "
    'text. Put your final answer in the following json format: {"output": <your input>}, where <your input> should '
    "strictly match the input requirement as specified."
)
_INVERT_DECODER = (
    "The function `main_solution` performs decoding. Use its inverse logic, an encoding function "
    "`main_solution_inverse` that you derive, to infer your answer: the value `main_solution_inverse` returns for the "
    "given input. Do not run or duplicate `main_solution` directly."
)
_INVERT_ENCODER = (
    "The function `main_solution` performs encoding. Use its inverse logic, a decoding function "
    "`main_solution_inverse` that you derive, to infer your answer: the input for which `main_solution` returns the "
    "given output. Do not run or duplicate `main_solution` directly."
)

STRING_ANSWER_TYPE = 'str (e.g. "hello world")'


def io_requirements(algorithm: Algorithm, encoder: bool, *, blind: bool = False) -> str:
    """The typed I/O requirements of the encoder (`encoder`) or decoder listing of `algorithm`."""
    z_type, z_text = algorithm.prompt.z_type, algorithm.prompt.z_text
    if blind:
        z_text = "The encoded form."
    if encoder:
        name = "x" if blind else "uncompressed"
        x_text = "The input string." if blind else "The input string to be compressed."
        return f"Input:\n  `{name}` (str): {x_text}\n\nOutput:\n  `return` ({z_type}): {z_text}"
    name = "x" if blind else "compressed"
    x_text = "The original string." if blind else "The original input string before compression."
    return f"Input:\n  `{name}` ({z_type}): {z_text}\n\nOutput:\n  `return` (str): {x_text}"


def blind_source(algorithm: Algorithm, source: str) -> str:
    """`source` with its identifiers renamed as the release's blinding does (names after a `.` and keywords kept),
    and the string literals that name the encoding made neutral."""
    names = algorithm.prompt.blind_names
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    out, previous = [], None
    for token in tokens:
        text = token.string
        if token.type == tokenize.NAME and not keyword.iskeyword(text) and previous != "." and text in names:
            token = token._replace(string=names[text])
        elif token.type == tokenize.STRING:
            for old, new in algorithm.prompt.blind_strings.items():
                token = token._replace(string=token.string.replace(old, new))
        out.append(token)
        previous = text if token.type == tokenize.OP else None
    return tokenize.untokenize(out)


def _example(backward: bool) -> str:
    given = '"cba3"' if backward else '"abc"'
    label = "output" if backward else "input"
    answer = '"abc"' if backward else '"cba3"'
    thought = _BACKWARD_THOUGHT if backward else _FORWARD_THOUGHT
    return (
        f"The input and output requirements are as follows:\n\n{_EXAMPLE_IO}\n\n"
        f"Given the following {label}:\n\n{given}\n\n"
        f"Given the following function:\n\n[PYTHON]\n{_EXAMPLE_SOURCE}[/PYTHON]\n\n"
        f"{_ASK_INPUT if backward else _ASK_OUTPUT}\n\n"
        f"[THOUGHT]\n{thought}\n[/THOUGHT]\n\n"
        f'[ANSWER]\n{{"output": {answer}}}\n[/ANSWER]'
    )


def paper_prompt(
    algorithm: Algorithm, *, shows_encoder: bool, inversion: bool, given: Any, source: str, blind: bool = False
) -> str:
    """The user prompt of one task in the paper's framing.

    `given` is the Python value shown (x, or z as the listing takes or returns it), rendered with `repr`. The two
    forward tasks and O/P Pred-I ask for an output; I/P Pred-I (the encoder shown, its output given) asks for an
    input. The requirements describe the question (O/P Pred-I: input x, output z), the function is `source`.
    """
    backward = inversion and shows_encoder  # I/P Pred-I: the encoder's output is given, its input asked
    answers_z = shows_encoder != inversion  # O/P Pred and O/P Pred-I
    describes_encoder = answers_z
    shown = blind_source(algorithm, source) if blind else source
    answer_type = algorithm.prompt.answer_type if answers_z else STRING_ANSWER_TYPE
    requirements = io_requirements(algorithm, describes_encoder, blind=blind)
    parts = [
        _BACKWARD_INSTRUCTION if backward else _FORWARD_INSTRUCTION,
        _example(backward),
        f"The input and output requirements are as follows:\n\n{requirements}",
        f"Given the following {'output' if backward else 'input'}:\n\n{given!r}",
        f"Given the following function:\n\n[PYTHON]\n{shown.rstrip()}\n[/PYTHON]",
    ]
    if inversion:
        parts.append(_INVERT_ENCODER if shows_encoder else _INVERT_DECODER)
    parts.append(
        f'{_ASK_INPUT if backward else _ASK_OUTPUT}\nThe "output" value must be of type: {answer_type}.\n'
        'Return only:\n[ANSWER]\n{"output": <your answer>}\n[/ANSWER]'
    )
    return "\n\n".join(parts) + "\n"


__all__ = [
    "BUILD_PROMPT_STYLES",
    "PROMPT_STYLES",
    "STRING_ANSWER_TYPE",
    "SYSTEM_MESSAGE",
    "PromptStyle",
    "blind_source",
    "io_requirements",
    "paper_prompt",
]
