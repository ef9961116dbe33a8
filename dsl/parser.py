"""Parse DSL program text into a `Program`, checking syntax, arity and argument kinds. Never evaluates the text."""

from __future__ import annotations

import keyword
import re

from dsl.functions import FUNCTIONS, PREDICATES, ArgKind
from dsl.program import Arg, DSLError, Line, Program

_ASSIGN = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*\((.*)\)\s*")
_OUTPUT = re.compile(r"\s*output\s*=\s*([A-Za-z_]\w*)\s*")
_TOKEN = re.compile(r"\s*(?:(-?\d+)|([A-Za-z_]\w*)|(\[)|(\])|(,))")
# Targets must not be DSL names, Python keywords, or builtins that render_python's definitions call.
PYTHON_BUILTINS_USED = {"len", "list", "max", "min", "range", "sorted", "zip"}
_RESERVED = {"output", *FUNCTIONS, *PREDICATES, *keyword.kwlist, *PYTHON_BUILTINS_USED}


def _strip_comment(text: str) -> str:
    cut = text.find("#")
    return text if cut < 0 else text[:cut]


def _parse_int(digits: str, lineno: int) -> int:
    try:
        return int(digits)
    except ValueError as exc:  # more digits than Python's int-from-string limit
        raise DSLError(f"integer literal too long ({len(digits)} characters)", lineno) from exc


def _parse_args(text: str, lineno: int) -> tuple[Arg, ...]:
    """Split `a, [1, 2], name` into typed arguments; literals only, no expressions."""
    args: list[Arg] = []
    pos, end = 0, len(text.rstrip())
    expect_arg = True
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise DSLError(f"unexpected text in arguments: {text[pos:].strip()[:40]!r}", lineno)
        pos = m.end()
        number, name, open_bracket, _, comma = m.groups()
        if comma:
            if expect_arg:
                raise DSLError("empty argument", lineno)
            expect_arg = True
            continue
        if not expect_arg:
            raise DSLError("missing comma between arguments", lineno)
        expect_arg = False
        if number is not None:
            args.append(_parse_int(number, lineno))
        elif name is not None:
            args.append(name)
        elif open_bracket:
            items, pos = _parse_list(text, pos, lineno)
            args.append(items)
        else:
            raise DSLError("unexpected ']'", lineno)
    if expect_arg and args:
        raise DSLError("trailing comma in arguments", lineno)
    return tuple(args)


def _parse_list(text: str, pos: int, lineno: int) -> tuple[tuple[int, ...], int]:
    """The integers of a list literal whose '[' ends at `pos`, and the position after its ']'."""
    items: list[int] = []
    expect_item = True  # an integer (or the closing bracket) comes next
    while True:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise DSLError("unterminated list literal", lineno)
        pos = m.end()
        number, _, _, close_bracket, comma = m.groups()
        if close_bracket:
            return tuple(items), pos
        if number is not None and expect_item:
            items.append(_parse_int(number, lineno))
            expect_item = False
        elif comma and not expect_item:
            expect_item = True
        else:
            raise DSLError("list literals hold integers separated by commas", lineno)


def _check_line(line: Line, defined: set[str], lineno: int) -> None:
    func, args = line.func, line.args
    if func not in FUNCTIONS:
        hint = " (a predicate; use filter(pred, seq))" if func in PREDICATES else ""
        raise DSLError(f"unknown function {func!r}{hint}", lineno)
    if line.target in _RESERVED:
        raise DSLError(f"{line.target!r} is a reserved name (a DSL function, Python keyword or builtin)", lineno)
    kinds = FUNCTIONS[func][1]
    if len(args) != len(kinds):
        raise DSLError(f"{func} takes {len(kinds)} argument(s), got {len(args)}", lineno)
    for position, (arg, kind) in enumerate(zip(args, kinds), start=1):
        where = f"{func} argument {position}"
        if kind is ArgKind.INT and (isinstance(arg, bool) or not isinstance(arg, int)):
            raise DSLError(f"{where} must be an integer, got {arg!r}", lineno)
        if kind is ArgKind.LIST and not isinstance(arg, tuple):
            raise DSLError(f"{where} must be a list of integers, got {arg!r}", lineno)
        if kind is ArgKind.PRED and arg not in PREDICATES:
            raise DSLError(f"{where} must be one of {', '.join(PREDICATES)}, got {arg!r}", lineno)
        if kind is ArgKind.SEQ:
            if not isinstance(arg, str):
                raise DSLError(f"{where} must name a sequence, got {arg!r}", lineno)
            if arg not in defined:
                raise DSLError(f"{where}: {arg!r} is not defined on an earlier line", lineno)


def parse_program(text: str, partial: bool = False) -> Program:
    """Parse official DSL text (`# ...` comments and blank lines are ignored); raise `DSLError` naming the line.

    `partial`: a program still being written may lack its output line; its `output` is then its last line's target
    (so running it gives that line's values). It still needs one assignment."""
    if not isinstance(text, str):
        raise DSLError(f"program must be text, got {type(text).__name__}")
    lines: list[Line] = []
    linenos: list[int] = []
    defined: set[str] = set()
    output: str | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        code = _strip_comment(raw)
        if not code.strip():
            continue
        if output is not None:
            raise DSLError("nothing may follow the output line", lineno)
        m = _OUTPUT.fullmatch(code)
        if m:
            if m.group(1) not in defined:
                raise DSLError(f"output: {m.group(1)!r} is not defined on an earlier line", lineno)
            output = m.group(1)
            linenos.append(lineno)
            continue
        m = _ASSIGN.fullmatch(code)
        if m is None:
            raise DSLError(f"expected 'name = function(args)' or 'output = name', got {code.strip()[:60]!r}", lineno)
        line = Line(m.group(1), m.group(2), _parse_args(m.group(3), lineno))
        _check_line(line, defined, lineno)
        lines.append(line)
        linenos.append(lineno)
        defined.add(line.target)
    if output is None:
        if partial and lines:
            return Program(tuple(lines), lines[-1].target, tuple(linenos))
        raise DSLError("program has no 'output = <sequence>' line")
    return Program(tuple(lines), output, tuple(linenos))
