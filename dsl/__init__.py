"""The KT sequence DSL: functions, parser, interpreter, uniform-prior bit encoder, sampler and corpus generator.

Public API used by the other packages::

    from dsl import parse_program, run_program, program_bits, render_program, render_python, sample_program
"""

from dsl.bits import compression_rate, program_bits
from dsl.functions import FUNCTION_NAMES, NUM_FUNCTIONS
from dsl.interpreter import run_lines, run_program
from dsl.parser import parse_program
from dsl.program import DSLError, Line, Program, render_program, render_python
from dsl.sampler import SamplerConfig, sample_program

__all__ = [
    "FUNCTION_NAMES",
    "NUM_FUNCTIONS",
    "DSLError",
    "Line",
    "Program",
    "SamplerConfig",
    "compression_rate",
    "parse_program",
    "program_bits",
    "render_program",
    "render_python",
    "run_lines",
    "run_program",
    "sample_program",
]
