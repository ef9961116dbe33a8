"""Sample DSL programs with the official generator's distribution (KT paper §3.3, §A.2).

`sample_program` follows the official `get_program` step by step (facebookresearch/KoLMogorov,
src/synthetic_data_generation/generate_data.py), including behaviour that shapes its distribution:
- the modifier loops walk the list of sequences while appending to it, so a new sequence can itself be repeated,
  sub-sequenced, substituted or scan-added later in the same loop;
- the filter step applies to the last sequence defined before it (the official loop variable that leaks out), and its
  0.3 gate is drawn only once the filtered sequence differs and keeps more than two values;
- the math step draws `operation_rand` for every original sequence; min_n / max_n apply only to set_list sequences;
- a sequence excluded after substitution can still be picked in the reuse pass.
The paper's text says 0.1 for sub-sequences; the code (and so this default) uses 0.05.

Randomness comes only from the `random.Random` passed in, so a program is reproducible from its seed alone.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, fields

from dsl.functions import (
    PREDICATES,
    add_item_list,
    add_two_lists,
    get_subsequence_between_indices,
    get_subsequence_with_jumps,
    interleave,
    max_n,
    min_n,
    modulo_item_list,
    modulo_two_lists,
    range_func_interval,
    scan_add,
    substitute,
    subtract_item_list,
    subtract_two_lists,
)
from dsl.program import Line, Program

INITIATORS = ("range_func_up", "range_func_interval", "repeat_num", "set_list")


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class SamplerConfig:
    """Every gate, probability and range of the sampler; the defaults are the official generator's."""

    max_initiators: int = field(default=5, metadata=_help("Base sequences per program, drawn from 1..max."))
    min_length: int = field(default=5, metadata=_help("Shortest base sequence."))
    max_length: int = field(default=25, metadata=_help("Longest base sequence."))
    min_value: int = field(default=0, metadata=_help("Smallest value."))
    max_value: int = field(default=255, metadata=_help("Largest value (values are bytes: at most 255)."))
    concat_prob: float = field(default=0.8, metadata=_help("Merge by concatenate (else interleave)."))
    reuse_prob: float = field(default=0.2, metadata=_help("Per sequence: merge one used at most once again."))
    list_update_prob: float = field(default=0.4, metadata=_help("Gate of the list modifiers."))
    reverse_prob: float = field(default=0.1, metadata=_help("reverse_list per sequence (not repeat_num)."))
    repeat_list_prob: float = field(default=0.1, metadata=_help("repeat_list per sequence."))
    subsequence_prob: float = field(default=0.05, metadata=_help("Each of the two sub-sequence modifiers."))
    substitute_prob: float = field(default=0.1, metadata=_help("substitute per sequence."))
    exclude_substitution_prob: float = field(default=0.25, metadata=_help("Drop the original after substitute."))
    math_update_prob: float = field(default=0.4, metadata=_help("Gate of the math modifiers."))
    min_max_prob: float = field(default=0.1, metadata=_help("max_n / min_n per set_list sequence."))
    add_subtract_prob: float = field(default=0.1, metadata=_help("add_item_list / subtract_item_list."))
    modulo_prob: float = field(default=0.1, metadata=_help("modulo_item_list."))
    scan_add_prob: float = field(default=0.1, metadata=_help("scan_add per sequence."))
    filter_update_prob: float = field(default=0.4, metadata=_help("Try a filter on the last sequence."))
    filter_sequences_prob: float = field(default=0.3, metadata=_help("Keep a filter that changed the sequence."))
    two_list_update_prob: float = field(default=0.4, metadata=_help("Gate of the pointwise mergers."))
    two_list_sub_add_prob: float = field(default=0.1, metadata=_help("add/subtract_two_lists per pair."))
    two_list_modulo_prob: float = field(default=0.1, metadata=_help("modulo_two_lists per pair."))
    interval_min: int = field(default=2, metadata=_help("range_func_interval step, smallest."))
    interval_max: int = field(default=5, metadata=_help("range_func_interval step, largest."))
    repeat_min: int = field(default=2, metadata=_help("repeat_list count, smallest."))
    repeat_max: int = field(default=4, metadata=_help("repeat_list count, largest."))
    jump_min: int = field(default=2, metadata=_help("get_subsequence_with_jumps step, smallest."))
    jump_max: int = field(default=5, metadata=_help("get_subsequence_with_jumps step, largest."))
    min_max_n_min: int = field(default=3, metadata=_help("max_n / min_n count, smallest."))
    min_max_n_margin: int = field(default=2, metadata=_help("max_n / min_n count, largest is length - margin."))

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_prob") and not 0.0 <= value <= 1.0:
                raise ValueError(f"{f.name} must be in [0, 1], got {value}")
        if not 0 <= self.min_value < self.max_value <= 255:
            raise ValueError(f"need 0 <= min_value < max_value <= 255, got {self.min_value}, {self.max_value}")
        if not 1 <= self.min_length <= self.max_length <= self.max_value - self.min_value:
            raise ValueError(f"need 1 <= min_length <= max_length <= value range, got {self.min_length}..{self.max_length}")
        if self.max_initiators < 1:
            raise ValueError(f"max_initiators must be >= 1, got {self.max_initiators}")
        for low, high in (("interval_min", "interval_max"), ("repeat_min", "repeat_max"), ("jump_min", "jump_max")):
            if not 1 <= getattr(self, low) <= getattr(self, high):
                raise ValueError(f"need 1 <= {low} <= {high}")
        if self.min_max_n_min < 0 or self.min_max_n_margin < 0:
            raise ValueError("min_max_n_min and min_max_n_margin must be >= 0")

    def to_dict(self) -> dict[str, int | float]:
        return asdict(self)


DEFAULT_CONFIG = SamplerConfig()


def sample_program(rng: random.Random, config: SamplerConfig = DEFAULT_CONFIG) -> tuple[Program, list[int]]:
    """One program and the sequence it outputs (values in min_value..max_value)."""
    uniform = rng.random

    def randint(low: int, high: int) -> int:
        return low + int(uniform() * (high - low + 1))

    lo, hi = config.min_value, config.max_value
    seqs: list[list[int]] = []  # values of sequence_{k+1}
    tags: list[str] = []  # "set_list" / "repeat" / "" per sequence, as the official full names
    lines: list[Line] = []

    def add(func: str, args: tuple, values: list[int], tag: str = "") -> None:
        lines.append(Line(f"sequence_{len(seqs) + 1}", func, args))
        seqs.append(values)
        tags.append(tag)

    def name(index: int) -> str:
        return f"sequence_{index + 1}"

    # --- initiators
    for _ in range(randint(1, config.max_initiators)):
        length = randint(config.min_length, config.max_length)
        start = randint(lo, hi - length)
        choice = INITIATORS[int(uniform() * 4)]
        if choice == "range_func_interval":
            interval = randint(config.interval_min, config.interval_max)
            end = min(start + (length - 1) * interval, hi) + 1
            add(choice, (start, end, interval), range_func_interval(start, end, interval))
        elif choice == "repeat_num":
            value = randint(lo, hi)
            add(choice, (length, value), [value] * length, "repeat")
        elif choice == "set_list":
            values = [randint(lo, hi) for _ in range(length)]
            add(choice, (tuple(values),), values, "set_list")
        else:
            add(choice, (start, start + length - 1), list(range(start, start + length)))

    # --- list modifiers (loops see the sequences they append)
    reversed_indices: set[int] = set()
    excluded: set[int] = set()
    if uniform() < config.list_update_prob:
        index = 0
        while index < len(seqs):
            if uniform() < config.reverse_prob and index not in reversed_indices and tags[index] != "repeat":
                add("reverse_list", (name(index),), seqs[index][::-1])
                reversed_indices.add(index)
                reversed_indices.add(len(seqs) - 1)
            index += 1
        index = 0
        while index < len(seqs):
            seq = seqs[index]
            if uniform() < config.repeat_list_prob:
                times = randint(config.repeat_min, config.repeat_max)
                add("repeat_list", (times, name(index)), seq * times)
            if index not in reversed_indices and index not in excluded:
                if uniform() < config.subsequence_prob:
                    jump = randint(config.jump_min, config.jump_max)
                    add("get_subsequence_with_jumps", (name(index), jump), get_subsequence_with_jumps(seq, jump))
                if uniform() < config.subsequence_prob and len(seq) > 1:
                    start = randint(0, len(seq) - 2)
                    end = randint(start + 2, len(seq))
                    add(
                        "get_subsequence_between_indices",
                        (name(index), start, end),
                        get_subsequence_between_indices(seq, start, end),
                    )
            index += 1
        index = 0
        while index < len(seqs):
            if uniform() < config.substitute_prob:
                seq = seqs[index]
                patterns = sorted(set(seq))
                pattern = patterns[int(uniform() * len(patterns))]
                replacement = randint(lo, hi)
                if pattern != replacement:
                    add("substitute", (name(index), pattern, replacement), substitute(seq, pattern, replacement))
                    if uniform() < config.exclude_substitution_prob:
                        excluded.add(index)
            index += 1

    # --- math modifiers on the sequences defined so far
    if uniform() < config.math_update_prob:
        for index in range(len(seqs)):
            seq = seqs[index]
            operation_rand = uniform()
            if tags[index] == "set_list" and uniform() < config.min_max_prob:
                use_max = uniform() < 0.5
                n_high = len(seq) - config.min_max_n_margin
                if n_high >= config.min_max_n_min:
                    n = randint(config.min_max_n_min, n_high)
                    if use_max:
                        add("max_n", (name(index), n), max_n(seq, n))
                    else:
                        add("min_n", (name(index), n), min_n(seq, n))
            elif operation_rand < config.add_subtract_prob:
                if uniform() < 0.5:
                    room = hi - max(seq)
                    if room > 1:
                        constant = randint(1, room)
                        add("add_item_list", (name(index), constant), add_item_list(seq, constant))
                else:
                    room = min(seq) - lo
                    if room > 1:
                        constant = randint(1, room)
                        add("subtract_item_list", (name(index), constant), subtract_item_list(seq, constant))
            elif operation_rand < config.add_subtract_prob + config.modulo_prob:
                third_largest = max_n(seq, 3)[-1]
                if third_largest > 2:
                    constant = randint(2, third_largest)
                    add("modulo_item_list", (name(index), constant), modulo_item_list(seq, constant))

    # --- scan_add (the loop sees what it appends)
    index = 0
    while index < len(seqs):
        if uniform() < config.scan_add_prob:
            seq = seqs[index]
            if len(set(seq)) > 2:
                scanned = scan_add(seq)
                if max(scanned) <= hi:
                    add("scan_add", (name(index),), scanned)
        index += 1

    # --- filter on the last sequence
    if uniform() < config.filter_update_prob:
        last = len(seqs) - 1
        predicate = ("is_even", "is_odd", "is_not_zero")[int(uniform() * 3)]
        test = PREDICATES[predicate]
        filtered = [x for x in seqs[last] if test(x)]
        if filtered != seqs[last] and len(filtered) > 2 and uniform() < config.filter_sequences_prob:
            add("filter", (predicate, name(last)), filtered)

    # --- pointwise mergers of equal-length pairs
    if uniform() < config.two_list_update_prob:
        count = len(seqs)
        for i in range(count):
            for j in range(i + 1, count):
                operation_rand = uniform()
                if operation_rand < config.two_list_sub_add_prob:
                    func = "add_two_lists" if uniform() < 0.5 else "subtract_two_lists"
                elif operation_rand < config.two_list_modulo_prob + config.two_list_sub_add_prob:
                    func = "modulo_two_lists"
                else:
                    continue
                a, b = seqs[i], seqs[j]
                if len(a) != len(b):
                    continue
                merged = (
                    add_two_lists(a, b)
                    if func == "add_two_lists"
                    else subtract_two_lists(a, b)
                    if func == "subtract_two_lists"
                    else modulo_two_lists(a, b)
                )
                if merged and lo <= min(merged) and max(merged) <= hi and len(set(merged)) > 2:
                    add(func, (name(i), name(j)), merged)

    # --- merge everything into the output: each non-excluded sequence once, then reuse
    usage = [0] * len(seqs)
    output: list[int] | None = None
    output_name = ""
    merges: list[Line] = []
    next_number = len(seqs) + 1

    def merge(index: int) -> None:
        nonlocal output, output_name, next_number
        usage[index] += 1
        if output is None:
            output, output_name = seqs[index], name(index)
            return
        if uniform() < config.concat_prob:
            func, output = "concatenate", output + seqs[index]
        else:
            func, output = "interleave", interleave(output, seqs[index])
        target = f"sequence_{next_number}"
        merges.append(Line(target, func, (output_name, name(index))))
        output_name = target
        next_number += 1

    for index in range(len(seqs)):
        if index not in excluded:
            merge(index)
    for _ in range(len(usage)):
        if uniform() < config.reuse_prob:
            candidates = [i for i, used in enumerate(usage) if used < 2]
            merge(candidates[int(uniform() * len(candidates))])

    assert output is not None  # at least one initiator is never excluded
    return Program(tuple(lines + merges), output_name), output
