"""Line search (`kt eval kt --line-search R`): test-time search line by line, for programs that write the sequence
left to right (the segment programs of `dsl.segments`).

The model writes one line at a time, greedily; the interpreter runs the program so far and checks the new line's
value against the sequence the program must print (the encoder knows it: this is compression). A line passes when
its value

- is a prefix of the sequence longer than any before it (the output so far grows),
- or is the sequence's next numbers after that prefix, in order or reversed (a piece about to be concatenated;
  a descending run is written ascending, then reversed),
- or, for the output line, is the whole sequence.

A line that fails (it does not parse or run, its values are not the next ones, the model stops before the output
line) is sampled again: R samples at `--temperature`, the first that passes is kept. When none passes, the line
before is taken back and its place sampled again (`--line-backtracks`: a run written one too short passes its
check, then no line can follow it); past that budget the program ends there and will be judged incorrect. The
decoder needs nothing of this: the kept program is scored by the checker like any other, under the same prior, so
search only changes which program the encoder sends. Its cost is counted: lines generated greedily, lines sampled,
lines taken back, per sequence.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from dsl.feedback import is_output_line, line_code, run_program_so_far
from dsl.program import DSLError
from eval.kt.feedback_decoding import ContinuingBackend
from kt_train.generation import SamplingConfig

LINE_STOP = ["\n"]


def line_passes(values: list[int], sequence: Sequence[int], prefix: int, is_output: bool) -> bool:
    """Whether a line's value keeps a left-to-right program on the sequence (`prefix`: the longest prefix of the
    sequence written so far)."""
    if is_output:
        return list(values) == list(sequence)
    if not values:
        return False
    if len(values) > prefix and list(sequence[: len(values)]) == values:
        return True
    following = list(sequence[prefix : prefix + len(values)])
    return len(following) == len(values) and (following == values or following == values[::-1])


@dataclass
class LeftToRightProgram:
    """One program being written: its prompt, the sequence it must print and the lines kept so far."""

    prompt: str
    sequence: tuple[int, ...]
    lines: list[str] = field(default_factory=list)
    prefix: int = 0  # the longest prefix of the sequence a kept line holds
    prefixes: list[int] = field(default_factory=list)  # `prefix` before each kept line
    taken_back: dict[int, set[str]] = field(default_factory=dict)  # per line number, the lines taken back there
    backtracks: int = 0
    failures: int = 0  # lines that failed and were sampled again
    resample: bool = False  # a line was just taken back: sample its place again, no greedy line
    done: bool = False
    dropped: bool = False  # the prompt did not fit: no completion
    greedy_lines: int = 0
    sampled_lines: int = 0

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def accept(self, generated: str) -> bool:
        """Keep `generated` (one line, up to its newline) if it passes; the output line ends the program."""
        code = line_code(generated)
        if not code.strip() or code in self.taken_back.get(len(self.lines), ()):
            return False  # the model stopped before its output line, or wrote a line that led nowhere
        is_output = is_output_line(code)
        try:
            values = run_program_so_far([*self.lines, code])[-1]
        except DSLError:
            return False
        if not line_passes(values, self.sequence, self.prefix, is_output):
            return False
        self.lines.append(code)
        self.prefixes.append(self.prefix)
        if list(self.sequence[: len(values)]) == values:
            self.prefix = max(self.prefix, len(values))
        self.done = is_output
        return True

    def accept_greedy(self, generated: str) -> bool:
        """Keep the lines of a greedy continuation up to the first that fails (False) or the output line (True)."""
        for line in generated.splitlines(keepends=True) or [""]:
            self.greedy_lines += 1
            if not self.accept(line):
                return False
            if self.done:
                return True
        return False  # the model stopped before its output line

    def take_back(self, budget: int) -> bool:
        """Take back the last line, which led to a line no sample could write (a run one too short passes, then
        nothing follows it); False when there is none or `budget` take-backs are spent."""
        if not self.lines or self.backtracks >= budget:
            return False
        for later in [n for n in self.taken_back if n >= len(self.lines)]:
            del self.taken_back[later]  # what was refused after the line is not refused after another
        code, self.prefix = self.lines.pop(), self.prefixes.pop()
        self.taken_back.setdefault(len(self.lines), set()).add(code)
        self.backtracks += 1
        self.resample = True
        return True


@dataclass(frozen=True)
class LineSearchResult:
    """Per prompt: the program written (None: the prompt did not fit) and what it cost."""

    completion: str | None
    greedy_lines: int
    sampled_lines: int
    backtracks: int

    @property
    def cost(self) -> dict[str, int]:
        return {"greedy_lines": self.greedy_lines, "sampled_lines": self.sampled_lines, "backtracks": self.backtracks}


def line_search(
    backend: ContinuingBackend,
    prompts: Sequence[str],
    sequences: Sequence[Sequence[int]],
    sampling: SamplingConfig,
    samples: int,
    backtracks: int = 0,
    max_lines: int = 128,
    max_failures: int = 8,
) -> list[LineSearchResult]:
    """One program per prompt, written line by line: the greedy line, or when it fails the first of `samples` lines
    sampled at `sampling.temperature` that passes; when none passes, the line before is taken back and sampled again
    (at most `backtracks` times a program), else the program ends there. Each round continues every program not
    done greedily to its end (one call: its lines are checked in order and kept up to the first that fails, the
    same lines as greedy decoding line by line), then samples the failing lines, in one call drawn with seed
    `sampling.seed + round`. `sampling.max_new_tokens` bounds each call's text; a program ends after `max_failures`
    sampled lines (the search's cost is bounded by its inputs: at most `max_failures` + 1 rounds a program)."""
    programs = [LeftToRightProgram(p, tuple(s)) for p, s in zip(prompts, sequences, strict=True)]
    greedy = replace(sampling, temperature=0.0, n=1, stop=None)  # the rest of the program, checked line by line
    sampled = replace(sampling, n=samples, stop=LINE_STOP)
    for round_number in itertools.count():
        active = [p for p in programs if not p.done]
        if not active:
            break
        failed = [p for p in active if p.resample]
        fresh = [p for p in active if not p.resample]
        outputs = backend.generate([p.prompt for p in fresh], greedy, [p.text for p in fresh]) if fresh else []
        for program, texts in zip(fresh, outputs, strict=True):
            if texts is None:  # the prompt (with the program so far) no longer fits
                program.dropped, program.done = not program.lines, True
                continue
            if not program.accept_greedy(texts[0]):
                failed.append(program)
        candidates = (
            backend.generate(
                [p.prompt for p in failed],
                replace(sampled, seed=sampling.seed + round_number),
                prefixes=[p.text for p in failed],
            )
            if failed
            else []
        )
        for program, texts in zip(failed, candidates, strict=True):
            program.resample = False
            program.sampled_lines += len(texts or [])
            if not any(program.accept(text) for text in texts or []) and not program.take_back(backtracks):
                program.done = True  # no line passes: the program ends here, incomplete
            program.failures += 1
            if program.failures >= max_failures:
                program.done = True  # the search's budget a program: it ends as it stands
        for program in active:
            if not program.done and len(program.lines) >= max_lines:
                program.done = True
    return [
        LineSearchResult(
            None if p.dropped else p.text.removesuffix("\n"), p.greedy_lines, p.sampled_lines, p.backtracks
        )
        for p in programs
    ]


def line_search_summary(costs: Sequence[Mapping[str, int]], samples: int) -> dict[str, int]:
    """What a line search cost over a set: the lines generated greedily and sampled, and the sequences resampled."""
    return {
        "samples": samples,
        "items": len(costs),
        "items_resampled": sum(cost["sampled_lines"] > 0 for cost in costs),
        "greedy_lines": sum(cost["greedy_lines"] for cost in costs),
        "sampled_lines": sum(cost["sampled_lines"] for cost in costs),
        "backtracks": sum(cost["backtracks"] for cost in costs),
    }


__all__ = ["LeftToRightProgram", "LineSearchResult", "line_passes", "line_search", "line_search_summary"]
