"""Property tests: grammar round trip, interpreter robustness, sampler invariants."""

import keyword
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dsl import (
    DSLError,
    Line,
    Program,
    SamplerConfig,
    parse_program,
    program_bits,
    render_program,
    render_python,
    run_lines,
    run_program,
    sample_program,
)

# Argument kinds written out independently of dsl.functions: I int, L list, S sequence reference, P predicate.
SIGNATURES = {
    "range_func_up": "II",
    "range_func_interval": "III",
    "repeat_num": "II",
    "set_list": "L",
    "repeat_list": "IS",
    "reverse_list": "S",
    "substitute": "SII",
    "get_subsequence_with_jumps": "SI",
    "get_subsequence_between_indices": "SII",
    "max_n": "SI",
    "min_n": "SI",
    "add_item_list": "SI",
    "subtract_item_list": "SI",
    "modulo_item_list": "SI",
    "scan_add": "S",
    "filter": "PS",
    "add_two_lists": "SS",
    "subtract_two_lists": "SS",
    "modulo_two_lists": "SS",
    "concatenate": "SS",
    "interleave": "SS",
}
INITIATORS = sorted(f for f, sig in SIGNATURES.items() if "S" not in sig)
PREDICATES = ("is_even", "is_odd", "is_not_zero")
RESERVED = {"output", *SIGNATURES, *PREDICATES, *keyword.kwlist}
RESERVED |= {"len", "list", "max", "min", "range", "sorted", "zip"}  # builtins the rendered Python calls

DEFAULT_INTS = st.integers(-10, 300)
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(lambda s: s not in RESERVED)


@st.composite
def programs(draw, ints=DEFAULT_INTS, free_names=False, max_lines=8):
    """A random well-formed Program: any function per line, arguments of the right kinds, earlier references only."""
    lines: list[Line] = []
    targets: list[str] = []
    for k in range(draw(st.integers(1, max_lines))):
        func = draw(st.sampled_from(sorted(SIGNATURES) if targets else INITIATORS))
        args = []
        for kind in SIGNATURES[func]:
            if kind == "I":
                args.append(draw(ints))
            elif kind == "L":
                args.append(tuple(draw(st.lists(ints, max_size=8))))
            elif kind == "S":
                args.append(draw(st.sampled_from(targets)))
            else:
                args.append(draw(st.sampled_from(PREDICATES)))
        target = draw(identifiers) if free_names else f"sequence_{k + 1}"
        lines.append(Line(target, func, tuple(args)))
        targets.append(target)
    return Program(tuple(lines), draw(st.sampled_from(targets)))


# ----- (a) grammar round trip


@settings(max_examples=300, deadline=None)
@given(programs(ints=st.integers(-(2**70), 2**70), free_names=True))
def test_render_parse_round_trip(program):
    text = render_program(program)
    parsed = parse_program(text)
    assert parsed == program
    assert render_program(parsed) == text
    assert parsed.num_lines == len(program.lines) + 1
    assert program_bits(text) == program_bits(program)


@settings(max_examples=200, deadline=None)
@given(programs(ints=st.integers(-3, 12)))
def test_interpreter_total_and_matches_python(program):
    """Small programs either run or fail with DSLError; when they run, the rendered Python agrees."""
    try:
        values = run_lines(program, max_length=10_000)
    except DSLError as exc:
        assert str(exc).startswith("line ")
        return
    assert len(values) == len(program.lines) + 1
    assert all(len(v) <= 10_000 for v in values)
    # the commented form parses back to the same program
    assert parse_program(render_program(program, values)) == program
    namespace: dict = {}
    exec(render_python(program), namespace)  # our own generated code
    assert namespace["output"] == values[-1]


# ----- (b) sampler, default configuration


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32))
def test_sampled_program_invariants(seed):
    program, sequence = sample_program(random.Random(seed))
    text = render_program(program)
    parsed = parse_program(text)
    assert parsed == program
    assert run_program(text) == sequence
    assert run_program(program) == sequence
    assert sequence
    assert all(isinstance(v, int) and 0 <= v <= 255 for v in sequence)
    assert all(0 <= v <= 255 for values in run_lines(program) for v in values)
    assert program_bits(program) == program_bits(text)
    # official naming: sequence_1..sequence_n, each defined once; the output is the last line
    assert [line.target for line in program.lines] == [f"sequence_{k}" for k in range(1, len(program.lines) + 1)]
    assert program.output == program.lines[-1].target
    # reproducible from the seed alone
    again, again_sequence = sample_program(random.Random(seed))
    assert again == program
    assert again_sequence == sequence


# ----- (c) sampler, non-default configuration

SMALL_CONFIG = SamplerConfig(min_value=10, max_value=100, max_initiators=2)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32))
def test_custom_config_runs_and_stays_below_max(seed):
    program, sequence = sample_program(random.Random(seed), SMALL_CONFIG)
    assert run_program(render_program(program)) == sequence
    assert sequence
    assert max(sequence) <= 100
    initiators = [line for line in program.lines if line.func in INITIATORS]
    assert 1 <= len(initiators) <= 2
    if all(line.func != "modulo_item_list" for line in program.lines):
        assert min(sequence) >= 10


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32))
@example(28)
def test_custom_config_values_stay_in_range(seed):
    _, sequence = sample_program(random.Random(seed), SMALL_CONFIG)
    assert all(10 <= v <= 100 for v in sequence)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_value": 100, "max_value": 10},
        {"max_value": 256},
        {"min_value": -1},
        {"reuse_prob": 1.5},
        {"concat_prob": -0.1},
        {"max_initiators": 0},
        {"min_length": 0},
        {"min_length": 10, "max_length": 5},
        {"jump_min": 0},
        {"interval_min": 5, "interval_max": 2},
    ],
)
def test_invalid_sampler_config(kwargs):
    with pytest.raises(ValueError):
        SamplerConfig(**kwargs)
