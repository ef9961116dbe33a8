"""Program representation and rendering: the official DSL text and standalone Python."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

# An argument is an integer literal, a list literal of integers, or a name (a sequence or a predicate).
Arg = int | tuple[int, ...] | str


class DSLError(ValueError):
    """A malformed, ill-typed or failing program; the message names the line."""

    def __init__(self, message: str, lineno: int | None = None) -> None:
        self.lineno = lineno
        super().__init__(f"line {lineno}: {message}" if lineno is not None else message)


class DSLResourceError(DSLError):
    """A program that would run past the interpreter's limits (`dsl.interpreter.RunLimits`): too many elements, too
    large integers or too much work. Not a wrong program: one too costly to run."""


class Line(NamedTuple):
    """One assignment `target = func(args)`."""

    target: str
    func: str
    args: tuple[Arg, ...]


@dataclass(frozen=True, slots=True)
class Program:
    """Assignments followed by `output = <name>`."""

    lines: tuple[Line, ...]
    output: str
    # 1-based source line of each assignment, then of the output line; empty for programs built in code
    linenos: tuple[int, ...] = field(default=(), compare=False, repr=False)

    @property
    def num_lines(self) -> int:
        """Lines of program text, the output line included."""
        return len(self.lines) + 1

    def lineno(self, index: int) -> int:
        """Source line of assignment `index` (`len(lines)`: the output line), for error messages."""
        return self.linenos[index] if self.linenos else index + 1


def _render_arg(arg: Arg) -> str:
    if arg.__class__ is tuple:
        return "[" + ", ".join(map(str, arg)) + "]"  # type: ignore[arg-type]
    return arg if arg.__class__ is str else str(arg)  # type: ignore[return-value]


def render_line(line: Line) -> str:
    return line.target + " = " + line.func + "(" + ", ".join(map(_render_arg, line.args)) + ")"


def values_comment(values: list[int], max_values: int | None = None) -> str:
    """`# [v1, v2, ...]`: a line's values as an end-of-line comment, the first `max_values` of them and `...` after
    them when there are more (None: all)."""
    if max_values is not None and len(values) > max_values:
        return "# [" + ", ".join(map(str, values[:max_values])) + ", ...]"
    return "# [" + ", ".join(map(str, values)) + "]"


def render_program(program: Program, values: list[list[int]] | None = None, max_values: int | None = None) -> str:
    """Official textual syntax. With `values` (one list per line, the output's last) every line gets `# [values]`
    (`values_comment`, at most `max_values` values each)."""
    texts = [render_line(line) for line in program.lines]
    texts.append("output = " + program.output)
    if values is not None:
        if len(values) != len(texts):
            raise ValueError(f"values: expected {len(texts)} lists (one per line), got {len(values)}")
        texts = [f"{text} {values_comment(vals, max_values)}" for text, vals in zip(texts, values)]
    return "\n".join(texts)


# Python definitions equivalent to dsl.functions, importing nothing (max_n / min_n: heapq.nlargest(n, s) is
# documented as sorted(s, reverse=True)[:n]).
_PYTHON_DEFS: dict[str, str] = {
    "range_func_up": "def range_func_up(start, end):\n    return list(range(start, end + 1))",
    "range_func_interval": (
        "def range_func_interval(start, end, interval):\n    return list(range(start, end, interval))"
    ),
    "repeat_num": "def repeat_num(num, value):\n    return [value] * num",
    "set_list": "def set_list(values):\n    return list(values)",
    "repeat_list": "def repeat_list(num, seq):\n    return seq * num",
    "reverse_list": "def reverse_list(seq):\n    return seq[::-1]",
    "substitute": (
        "def substitute(seq, pattern, replacement):\n    return [replacement if x == pattern else x for x in seq]"
    ),
    "get_subsequence_with_jumps": "def get_subsequence_with_jumps(seq, jump):\n    return seq[::jump]",
    "get_subsequence_between_indices": (
        "def get_subsequence_between_indices(seq, start, end):\n    return seq[start:end]"
    ),
    "max_n": "def max_n(seq, n):\n    return sorted(seq, reverse=True)[:max(n, 0)]",
    "min_n": "def min_n(seq, n):\n    return sorted(seq)[:max(n, 0)]",
    "add_item_list": "def add_item_list(seq, constant):\n    return [x + constant for x in seq]",
    "subtract_item_list": "def subtract_item_list(seq, constant):\n    return [x - constant for x in seq]",
    "modulo_item_list": "def modulo_item_list(seq, constant):\n    return [x % constant for x in seq]",
    "scan_add": (
        "def scan_add(seq):\n    out, total = [], 0\n    for x in seq:\n        total += x\n"
        "        out.append(total)\n    return out"
    ),
    "filter": "def filter(predicate, seq):\n    return [x for x in seq if predicate(x)]",
    "is_even": "def is_even(x):\n    return x % 2 == 0",
    "is_odd": "def is_odd(x):\n    return x % 2 != 0",
    "is_not_zero": "def is_not_zero(x):\n    return x != 0",
    "add_two_lists": "def add_two_lists(a, b):\n    return [x + y for x, y in zip(a, b)]",
    "subtract_two_lists": "def subtract_two_lists(a, b):\n    return [x - y for x, y in zip(a, b)]",
    "modulo_two_lists": "def modulo_two_lists(a, b):\n    return [x % y for x, y in zip(a, b) if y != 0]",
    "concatenate": "def concatenate(a, b):\n    return a + b",
    "interleave": (
        "def interleave(a, b):\n    out = [v for pair in zip(a, b) for v in pair]\n"
        "    return out + (a if len(a) > len(b) else b)[min(len(a), len(b)):]"
    ),
}


def render_python(program: Program) -> str:
    """Standalone Python (no imports) that defines the functions it uses and assigns `output`."""
    used: list[str] = []
    for line in program.lines:
        for name in (line.func, *(a for a in line.args if isinstance(a, str) and a in _PYTHON_DEFS)):
            if name not in used:
                used.append(name)
    defs = "\n\n\n".join(_PYTHON_DEFS[name] for name in used)
    body = render_program(program)
    return f"{defs}\n\n\n{body}\n" if defs else f"{body}\n"
