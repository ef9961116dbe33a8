"""Run a DSL program: look up each function in `dsl.functions` and apply it. Safe for untrusted text (no exec/eval).

The run is bounded (`RunLimits`): elements per line and over the whole program, the size of every integer an
argument or a line holds, and the work (elements read and written over all lines). Past a limit the program stops
with `DSLResourceError` before the costly step, so a model's program cannot hold the trusted process that scores it
(a 4 KB program of 120 `scan_add` lines, integers of thousands of digits). The defaults are far above what the
official generator writes (sequences of at most a few hundred bytes; tested on a generated corpus).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dsl.functions import FUNCTIONS, PREDICATES, ArgKind
from dsl.parser import parse_program
from dsl.program import DSLError, DSLResourceError, Line, Program

SEQ, PRED, INT, LIST = ArgKind.SEQ, ArgKind.PRED, ArgKind.INT, ArgKind.LIST
DEFAULT_MAX_LENGTH = 1_000_000  # elements per sequence; guards against memory bombs such as repeat_list(10**9, s)


@dataclass(frozen=True)
class RunLimits:
    """What one program run may cost; a run past any of them ends in `DSLResourceError`."""

    max_length: int = field(default=DEFAULT_MAX_LENGTH, metadata={"help": "elements of one line's sequence"})
    max_total_elements: int = field(
        default=2_000_000, metadata={"help": "elements of all the program's sequences together"}
    )
    max_int_bits: int = field(default=64, metadata={"help": "bits of any integer in an argument or a sequence"})
    max_work: int = field(
        default=8_000_000, metadata={"help": "elements read and written over all lines (the run's time budget)"}
    )


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


def _check_integers(line: Line, kinds: tuple[ArgKind, ...], limits: RunLimits, lineno: int) -> None:
    """Integer and list-literal arguments within `max_int_bits` (a 4,000-digit modulus is refused, not run)."""
    for arg, kind in zip(line.args, kinds):
        numbers: tuple[int, ...] = (arg,) if kind is INT else arg if kind is LIST else ()  # type: ignore[assignment]
        bits = max((value.bit_length() for value in numbers), default=0)
        if bits > limits.max_int_bits:
            raise DSLResourceError(f"{line.func}: an argument of {bits} bits (limit {limits.max_int_bits})", lineno)


def _widest_bits(values: list[int]) -> int:
    return max(max(values).bit_length(), min(values).bit_length()) if values else 0


def run_lines(
    program: Program, max_length: int = DEFAULT_MAX_LENGTH, limits: RunLimits | None = None
) -> list[list[int]]:
    """Values of every line, the output's last; raise `DSLError` naming the failing line (`DSLResourceError` past
    `limits`; `max_length`, kept for callers, overrides its per-line length)."""
    limits = RunLimits(max_length=max_length) if limits is None else limits
    env: dict[str, list[int]] = {}
    values: list[list[int]] = []
    total = work = 0
    for index, line in enumerate(program.lines):
        lineno = program.lineno(index)
        entry = FUNCTIONS.get(line.func)
        if entry is None:
            raise DSLError(f"unknown function {line.func!r}", lineno)
        fn, kinds = entry
        if len(line.args) != len(kinds):
            raise DSLError(f"{line.func} takes {len(kinds)} argument(s), got {len(line.args)}", lineno)
        try:
            _check_integers(line, kinds, limits, lineno)
            read = sum(len(env[a]) for a, kind in zip(line.args, kinds) if kind is SEQ)  # type: ignore[index]
            if line.func in _GROWING:
                size = _result_length(line, env, lineno)
                if size > limits.max_length:
                    raise DSLResourceError(
                        f"{line.func} would build {size} elements (limit {limits.max_length})", lineno
                    )
                if total + size > limits.max_total_elements:
                    raise DSLResourceError(
                        f"the program would hold {total + size} elements (limit {limits.max_total_elements})", lineno
                    )
            if work + read > limits.max_work:
                raise DSLResourceError(
                    f"the program would read {work + read} elements (limit {limits.max_work})", lineno
                )
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
        total, work = total + len(result), work + read + len(result)
        if total > limits.max_total_elements:
            raise DSLResourceError(f"the program holds {total} elements (limit {limits.max_total_elements})", lineno)
        bits = _widest_bits(result)
        if bits > limits.max_int_bits:
            raise DSLResourceError(f"{line.func} made an integer of {bits} bits (limit {limits.max_int_bits})", lineno)
        env[line.target] = result
        values.append(result)
    if program.output not in env:
        raise DSLError(f"output: {program.output!r} is not defined", program.lineno(len(program.lines)))
    values.append(env[program.output])
    return values


def run_program(
    program: Program | str, max_length: int = DEFAULT_MAX_LENGTH, limits: RunLimits | None = None
) -> list[int]:
    """The program's output sequence. Accepts a `Program` or DSL text."""
    if isinstance(program, str):
        program = parse_program(program)
    return run_lines(program, max_length, limits)[-1]
