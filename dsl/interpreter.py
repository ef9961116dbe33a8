"""Run a DSL program: look up each function in `dsl.functions` and apply it. Safe for untrusted text (no exec/eval)."""

from __future__ import annotations

from dsl.functions import FUNCTIONS, PREDICATES, ArgKind
from dsl.parser import parse_program
from dsl.program import DSLError, Line, Program

SEQ, PRED = ArgKind.SEQ, ArgKind.PRED
DEFAULT_MAX_LENGTH = 1_000_000  # elements per sequence; guards against memory bombs such as repeat_list(10**9, s)


_GROWING = frozenset(
    {"range_func_up", "range_func_interval", "repeat_num", "repeat_list", "concatenate", "interleave"}
)


def _result_length(line: Line, env: dict[str, list[int]], lineno: int) -> int:
    """Length of the result of a function in `_GROWING`, computed before building it. The other functions never
    return more elements than an input has."""
    func, args = line.func, line.args
    if func == "range_func_up":
        return len(range(args[0], args[1] + 1))  # type: ignore[arg-type,operator]
    if func == "range_func_interval":
        if args[2] == 0:
            raise DSLError("range_func_interval: interval must not be zero", lineno)
        return len(range(args[0], args[1], args[2]))  # type: ignore[arg-type]
    if func == "repeat_num":
        return max(args[0], 0)  # type: ignore[type-var]
    if func == "repeat_list":
        return max(args[0], 0) * len(env[args[1]])  # type: ignore[type-var,index,operator]
    return len(env[args[0]]) + len(env[args[1]])  # type: ignore[index]


def run_lines(program: Program, max_length: int = DEFAULT_MAX_LENGTH) -> list[list[int]]:
    """Values of every line, the output's last; raise `DSLError` naming the failing line."""
    env: dict[str, list[int]] = {}
    values: list[list[int]] = []
    for index, line in enumerate(program.lines):
        lineno = program.lineno(index)
        entry = FUNCTIONS.get(line.func)
        if entry is None:
            raise DSLError(f"unknown function {line.func!r}", lineno)
        fn, kinds = entry
        if len(line.args) != len(kinds):
            raise DSLError(f"{line.func} takes {len(kinds)} argument(s), got {len(line.args)}", lineno)
        try:
            if line.func in _GROWING:
                size = _result_length(line, env, lineno)
                if size > max_length:
                    raise DSLError(f"{line.func} would build {size} elements (limit {max_length})", lineno)
            call_args = [
                env[a] if kind is SEQ else PREDICATES[a] if kind is PRED else a  # type: ignore[index]
                for a, kind in zip(line.args, kinds)
            ]
            result = fn(*call_args)
        except DSLError:
            raise
        except KeyError as exc:
            raise DSLError(f"{line.func}: {exc.args[0]!r} is not defined", lineno) from None
        except (TypeError, ValueError, ZeroDivisionError, IndexError, OverflowError, MemoryError) as exc:
            raise DSLError(f"{line.func}: {type(exc).__name__}: {exc}", lineno) from None
        env[line.target] = result
        values.append(result)
    if program.output not in env:
        raise DSLError(f"output: {program.output!r} is not defined", program.lineno(len(program.lines)))
    values.append(env[program.output])
    return values


def run_program(program: Program | str, max_length: int = DEFAULT_MAX_LENGTH) -> list[int]:
    """The program's output sequence. Accepts a `Program` or DSL text."""
    if isinstance(program, str):
        program = parse_program(program)
    return run_lines(program, max_length)[-1]
