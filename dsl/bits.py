"""Code length of a DSL program under the uniform prior (KT paper, Alg. 1), equal to the official encoder.

Matches `get_num_bits_per_program_uniform` of the official release (src/utils.py) float for float, including the order
of additions. Each line, the output line included, costs log2(num_functions + 1) for the function; parameters cost:

| function                                        | parameter bits (b = log2(number_range), r = log2(i + 1))  |
|-------------------------------------------------|-----------------------------------------------------------|
| set_list                                        | len(list) * b                                             |
| range_func_up                                   | 2b                                                        |
| range_func_interval                             | 2b + log2(8)                                              |
| repeat_num                                      | b + log2(20)                                              |
| repeat_list, get_subsequence_with_jumps         | r + log2(8)                                               |
| get_subsequence_between_indices                 | r + 2b                                                    |
| substitute                                      | r + 2b                                                    |
| add/subtract/modulo_item_list, max_n, min_n     | b + r                                                     |
| reverse_list, scan_add, filter                  | r                                                         |
| add/subtract/modulo_two_lists, concatenate,     | 2r                                                        |
| interleave                                      |                                                           |
| output line                                     | 0                                                         |

where i is the 0-based index of the line. Where the paper's prose and the code differ, this follows the code: filter's
predicate choice costs nothing, a reference costs log2(i + 1) (the paper says log of the current number of lines),
and repeat_num's count is charged log2(20) although the sampler draws lengths up to 25.
"""

from __future__ import annotations

import math

from dsl.functions import NUM_FUNCTIONS
from dsl.parser import parse_program
from dsl.program import Program

MAX_INTERVAL = 8  # official `max_range`: interval / jump / repeat-count parameters
MAX_REPETITIONS = 20  # official `max_length`: repeat_num's count
NUMBER_RANGE = 256  # official `number_range`: values are bytes

# The integer arguments (positions) that become values of a sequence, priced log2(number_range) bits each (set_list's
# list items too), and those priced log2(MAX_INTERVAL): range_func_interval's interval. Counts, jumps, indices and
# max_n/min_n's n only repeat or select elements: what they can say is bounded by the length.
_VALUE_ARGS = {
    "range_func_up": (0, 1),
    "range_func_interval": (0, 1),
    "repeat_num": (1,),
    "substitute": (1, 2),
    "add_item_list": (1,),
    "subtract_item_list": (1,),
    "modulo_item_list": (1,),
}
_INTERVAL_ARGS = {"range_func_interval": (2,)}


def _short_int(value: object) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"


def unencodable_literal(program: Program | str, number_range: int = NUMBER_RANGE) -> str | None:
    """Why the uniform prior cannot encode `program`'s integers at the price `program_bits` charges, or None.

    A value literal (one that becomes an element of a sequence: list items, range bounds, repeat_num's value,
    substitute's pair, the item-list constants) is priced log2(number_range) bits and must lie in 0..number_range (the
    top value included: the official sampler writes `range_func_interval`'s exclusive end up to max_value + 1, and
    keeps its 8 bits); `range_func_interval`'s interval, priced log2(MAX_INTERVAL) bits, in 1..MAX_INTERVAL. Counts,
    jumps and indices are not held to their price (the official sampler writes indices past 256 after repeat_list):
    they repeat or select elements, so they carry no more than the output's length does. Without this, one 53-bit
    template with a Chinese-remainder literal of thousands of digits "compresses" any sequence (issue 36); the
    official code has no such check because its sampler never writes such literals."""
    if isinstance(program, str):
        program = parse_program(program)
    for i, line in enumerate(program.lines):
        where = f"line {program.lineno(i)}: {line.func}"
        if line.func == "set_list":
            outside = [v for v in line.args[0] if not 0 <= v <= number_range]  # type: ignore[union-attr]
            if outside:
                return f"{where} list item {_short_int(outside[0])} is outside 0..{number_range}"
        bounds = [(p, 0, number_range) for p in _VALUE_ARGS.get(line.func, ())]
        bounds += [(p, 1, MAX_INTERVAL) for p in _INTERVAL_ARGS.get(line.func, ())]
        for position, low, high in bounds:
            value = line.args[position]
            if not low <= value <= high:  # type: ignore[operator]
                return f"{where} argument {position + 1} = {_short_int(value)} is outside {low}..{high}"
    return None


def program_bits(
    program: Program | str,
    num_functions: int = NUM_FUNCTIONS,
    number_range: int = NUMBER_RANGE,
) -> float:
    """Bits to encode `program` under the uniform prior over functions and parameters."""
    if isinstance(program, str):
        program = parse_program(program)
    b = math.log(number_range, 2)
    interval_bits = math.log(MAX_INTERVAL, 2)
    repeat_bits = math.log(MAX_REPETITIONS, 2)
    func_bits = math.log(num_functions + 1, 2)
    bits = 0.0
    for i, line in enumerate(program.lines):
        bits += func_bits
        r = math.log(i + 1, 2)
        func = line.func
        if func == "set_list":
            bits += len(line.args[0]) * b  # type: ignore[arg-type]
        elif func == "range_func_up":
            bits += b * 2
        elif func in ("get_subsequence_between_indices",):
            bits += r + 2 * b
        elif func in ("add_two_lists", "subtract_two_lists", "modulo_two_lists", "interleave", "concatenate"):
            bits += r + r
        elif func == "substitute":
            bits += r + b + b
        elif func == "range_func_interval":
            bits += b + b + interval_bits
        elif func in ("modulo_item_list", "add_item_list", "subtract_item_list", "min_n", "max_n"):
            bits += b + r
        elif func == "repeat_num":
            bits += b + repeat_bits
        elif func in ("get_subsequence_with_jumps", "repeat_list"):
            bits += r + interval_bits
        elif func in ("filter", "reverse_list", "scan_add"):
            bits += r
        else:
            raise ValueError(f"line {program.lineno(i)}: no code length for function {func!r}")
    bits += func_bits  # the output line
    return bits


def compression_rate(bits: float, length: int) -> float:
    """KT CompressionRate for one sequence: (1 + bits) / (8 * length); the 1 is the program-or-raw flag bit."""
    if length <= 0:
        raise ValueError(f"length must be positive, got {length}")
    return (1 + bits) / (8 * length)
