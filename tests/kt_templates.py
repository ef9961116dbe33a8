"""Programs that game a KT score, shared by the tests that show they no longer do."""

from __future__ import annotations

import math


def crt_template(sequence: list[int]) -> str:
    """Four lines that print `sequence` (values < 256): X = sequence[i] mod (1 + (i + 1) L) for all i (the moduli are
    pairwise coprime when lcm(1..n) divides L), written as one literal."""
    n = len(sequence)
    lcm = math.lcm(*range(1, n + 1))
    step = lcm * -(-256 // lcm)  # a multiple of lcm(1..n) with every modulus above 255
    moduli = [1 + (i + 1) * step for i in range(n)]
    product = math.prod(moduli)
    x = sum(v * (product // m) * pow(product // m, -1, m) for v, m in zip(sequence, moduli, strict=True)) % product
    return (
        f"sequence_1 = repeat_num({n}, {x})\n"
        f"sequence_2 = range_func_interval({1 + step}, {1 + (n + 1) * step}, {step})\n"
        "sequence_3 = modulo_two_lists(sequence_1, sequence_2)\noutput = sequence_3"
    )
