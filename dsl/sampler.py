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
    filter_list,
    interleave,
    max_n,
    min_n,
    modulo_item_list,
    modulo_two_lists,
    scan_add,
    substitute,
    subtract_item_list,
    subtract_two_lists,
)
from dsl.program import Line, Program


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
            raise ValueError(
                f"need 1 <= min_length <= max_length <= value range, got {self.min_length}..{self.max_length}"
            )
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


_NAMES = tuple(f"sequence_{k}" for k in range(1, 4097))  # name of sequence index k is _NAMES[k]


def _name(index: int) -> str:
    return _NAMES[index] if index < len(_NAMES) else f"sequence_{index + 1}"


def sample_program(rng: random.Random, config: SamplerConfig = DEFAULT_CONFIG) -> tuple[Program, list[int]]:
    """One program and the sequence it outputs (values in min_value..max_value)."""
    uniform = rng.random
    lo, hi = config.min_value, config.max_value
    span = hi - lo + 1
    byte_values = lo == 0 and hi == 255
    seqs: list[list[int]] = []  # values of sequence_{k+1}
    tags: list[str] = []  # "set_list" / "repeat" / "" per sequence, as the official full names
    lines: list[Line] = []

    def add(func: str, args: tuple, values: list[int], tag: str = "") -> None:
        lines.append(Line(_name(len(seqs)), func, args))
        seqs.append(values)
        tags.append(tag)

    # --- initiators
    for _ in range(1 + int(uniform() * config.max_initiators)):
        length = config.min_length + int(uniform() * (config.max_length - config.min_length + 1))
        start = lo + int(uniform() * (span - length))
        choice = int(uniform() * 4)
        if choice == 1:  # range_func_interval
            interval = config.interval_min + int(uniform() * (config.interval_max - config.interval_min + 1))
            end = min(start + (length - 1) * interval, hi) + 1
            add("range_func_interval", (start, end, interval), list(range(start, end, interval)))
        elif choice == 2:  # repeat_num
            value = lo + int(uniform() * span)
            add("repeat_num", (length, value), [value] * length, "repeat")
        elif choice == 3:  # set_list
            if byte_values:
                values = list(rng.getrandbits(8 * length).to_bytes(length, "little"))
            else:
                values = [lo + int(uniform() * span) for _ in range(length)]
            add("set_list", (tuple(values),), values, "set_list")
        else:  # range_func_up
            add("range_func_up", (start, start + length - 1), list(range(start, start + length)))

    # --- list modifiers (loops see the sequences they append)
    reversed_indices: set[int] = set()
    excluded: set[int] = set()
    if uniform() < config.list_update_prob:
        index = 0
        while index < len(seqs):
            if uniform() < config.reverse_prob and index not in reversed_indices and tags[index] != "repeat":
                add("reverse_list", (_name(index),), seqs[index][::-1])
                reversed_indices.add(index)
                reversed_indices.add(len(seqs) - 1)
            index += 1
        index = 0
        while index < len(seqs):
            seq = seqs[index]
            if uniform() < config.repeat_list_prob:
                times = config.repeat_min + int(uniform() * (config.repeat_max - config.repeat_min + 1))
                add("repeat_list", (times, _name(index)), seq * times)
            if index not in reversed_indices and index not in excluded:
                if uniform() < config.subsequence_prob:
                    jump = config.jump_min + int(uniform() * (config.jump_max - config.jump_min + 1))
                    add("get_subsequence_with_jumps", (_name(index), jump), seq[::jump])
                if uniform() < config.subsequence_prob and len(seq) > 1:
                    first = int(uniform() * (len(seq) - 1))
                    last = first + 2 + int(uniform() * (len(seq) - first - 1))
                    add("get_subsequence_between_indices", (_name(index), first, last), seq[first:last])
            index += 1
        index = 0
        while index < len(seqs):
            if uniform() < config.substitute_prob:
                seq = seqs[index]
                patterns = sorted(set(seq))
                pattern = patterns[int(uniform() * len(patterns))]
                replacement = lo + int(uniform() * span)
                if pattern != replacement:
                    add("substitute", (_name(index), pattern, replacement), substitute(seq, pattern, replacement))
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
                    n = config.min_max_n_min + int(uniform() * (n_high - config.min_max_n_min + 1))
                    if use_max:
                        add("max_n", (_name(index), n), max_n(seq, n))
                    else:
                        add("min_n", (_name(index), n), min_n(seq, n))
            elif operation_rand < config.add_subtract_prob:
                if uniform() < 0.5:
                    room = hi - max(seq)
                    if room > 1:
                        constant = 1 + int(uniform() * room)
                        add("add_item_list", (_name(index), constant), add_item_list(seq, constant))
                else:
                    room = min(seq) - lo
                    if room > 1:
                        constant = 1 + int(uniform() * room)
                        add("subtract_item_list", (_name(index), constant), subtract_item_list(seq, constant))
            elif operation_rand < config.add_subtract_prob + config.modulo_prob:
                third_largest = max_n(seq, 3)[-1]
                if third_largest > 2:
                    constant = 2 + int(uniform() * (third_largest - 1))
                    reduced = modulo_item_list(seq, constant)
                    if lo == 0 or min(reduced) >= lo:  # (always true with the official min_value 0)
                        add("modulo_item_list", (_name(index), constant), reduced)

    # --- scan_add (the loop sees what it appends)
    index = 0
    while index < len(seqs):
        if uniform() < config.scan_add_prob:
            seq = seqs[index]
            if len(set(seq)) > 2:
                scanned = scan_add(seq)
                if max(scanned) <= hi:
                    add("scan_add", (_name(index),), scanned)
        index += 1

    # --- filter on the last sequence
    if uniform() < config.filter_update_prob:
        last = len(seqs) - 1
        predicate = ("is_even", "is_odd", "is_not_zero")[int(uniform() * 3)]
        filtered = filter_list(PREDICATES[predicate], seqs[last])
        if filtered != seqs[last] and len(filtered) > 2 and uniform() < config.filter_sequences_prob:
            add("filter", (predicate, _name(last)), filtered)

    # --- pointwise mergers of equal-length pairs
    if uniform() < config.two_list_update_prob:
        count = len(seqs)
        sub_add, modulo = config.two_list_sub_add_prob, config.two_list_modulo_prob + config.two_list_sub_add_prob
        for i in range(count):
            for j in range(i + 1, count):
                operation_rand = uniform()
                if operation_rand < sub_add:
                    func = "add_two_lists" if uniform() < 0.5 else "subtract_two_lists"
                elif operation_rand < modulo:
                    func = "modulo_two_lists"
                else:
                    continue
                a, b = seqs[i], seqs[j]
                if len(a) != len(b):
                    continue
                merged = _POINTWISE[func](a, b)
                if merged and lo <= min(merged) and max(merged) <= hi and len(set(merged)) > 2:
                    add(func, (_name(i), _name(j)), merged)

    # --- merge everything into the output: each non-excluded sequence once, then reuse
    # (the official code interleaves the concatenate/interleave draws with the reuse draws; all are independent, so
    # drawing the merge order first leaves the distribution unchanged)
    order = [i for i in range(len(seqs)) if i not in excluded]
    usage = [0] * len(seqs)
    for i in order:
        usage[i] = 1
    for _ in range(len(usage)):
        if uniform() < config.reuse_prob:
            candidates = [i for i, used in enumerate(usage) if used < 2]
            pick = candidates[int(uniform() * len(candidates))]
            usage[pick] += 1
            order.append(pick)
    output, output_name = seqs[order[0]], _name(order[0])
    number = len(seqs)
    for index in order[1:]:
        if uniform() < config.concat_prob:
            func, output = "concatenate", output + seqs[index]
        else:
            func, output = "interleave", interleave(output, seqs[index])
        target = _name(number)
        lines.append(Line(target, func, (output_name, _name(index))))
        output_name = target
        number += 1
    return Program(tuple(lines), output_name), output


_POINTWISE = {
    "add_two_lists": add_two_lists,
    "subtract_two_lists": subtract_two_lists,
    "modulo_two_lists": modulo_two_lists,
}
