"""RTCE rewards: `rtce_answer_reward` (the answer against the reference: numbers exact by default, or within the
release's tolerance as `kt eval rtce` scores it) and `rtce_roundtrip_reward` (the model's encoding z^ of x and its
decoding x^ of z^, from one answer block).

Both read rows of `tracegen.rl_data.rtce_rl_rows` and share a mixed dataset: each returns None (not applicable) on
the other's rows, told apart by the optional `task` column (`roundtrip` or a prediction task).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from eval.metrics import edit_similarity, exact_match
from kt_train.rewards import SKIPPED, PooledReward, Reward, Scored
from kt_train.sandbox import DEFAULT_TIMEOUT_S, SandboxJob, SandboxResult
from kt_train.sandbox import Verdict as SandboxVerdict
from tracegen.algorithms import get_algorithm
from tracegen.answers import answer_region, extract_answer, find_output_object, strip_code_fences
from tracegen.tasks import ROUNDTRIP_TASK

Metric = Literal["em", "es"]
Check = Literal["both", "model", "executed"]
Tolerance = Literal["exact", "release"]

# Runs in the sandbox after the reference decoder's source: decodes z^ (JSON text, parsed there) and reports a small,
# bounded result instead of the decoded value itself, which a hostile z^ can make huge.
DECODE_SOURCE = """

def roundtrip_decode(z_json, expected):
    import json
    value = main_solution(json.loads(z_json))
    if type(value) is not str:
        return {"type": type(value).__name__}
    return {"type": "str", "equal": value == expected, "length": len(value)}
"""
_SANDBOX_VERDICTS = {
    SandboxVerdict.TIMEOUT: "timeout",
    SandboxVerdict.MEMORY: "memory",
    SandboxVerdict.KILLED: "killed",
}


def json_numbers(value: Any) -> list[int | float]:
    """The numbers of a JSON value in a fixed order (dict values by sorted key; bools are not numbers)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [value]
    if isinstance(value, list | tuple):
        return [number for item in value for number in json_numbers(item)]
    if isinstance(value, dict):
        return [number for key in sorted(value, key=str) for number in json_numbers(value[key])]
    return []


def _tasks(columns: Mapping[str, list[Any]], count: int) -> list[str | None]:
    tasks = columns.get("task")
    return list(tasks) if tasks is not None else [None] * count


class RTCEAnswerReward(Reward):
    """The answer (`extract_answer`: last `[ANSWER]` block, first JSON object with `output`) against the row's
    `answer_json` (canonical JSON text of the reference).

    Options: `metric` "em" (1 when correct, else 0) or "es" (edit similarity of the canonical JSON texts, in
    [0, 1]); `tolerance` "exact" (correct: `eval.metrics.exact_match` with every number equal) or "release" (floats
    within 1e-3, relative or absolute, as `kt eval rtce` and the release score: an arithmetic-coding answer rounded
    to 3 decimals, about 10 of its ~50 bits, passes); `failure_reward` (no answer). Verdicts: `correct`, `wrong`,
    `no_answer`, `bad_row` (an `answer_json` that is not JSON); rows whose `task` is `roundtrip` are not applicable.
    """

    name = "rtce_answer_reward"
    required_columns = ("answer_json",)

    def __init__(self, metric: Metric = "em", tolerance: Tolerance = "exact", failure_reward: float = 0.0) -> None:
        super().__init__(failure_reward)
        if metric not in ("em", "es"):
            raise ValueError(f"metric must be 'em' or 'es', got {metric!r}")
        if tolerance not in ("exact", "release"):
            raise ValueError(f"tolerance must be 'exact' or 'release', got {tolerance!r}")
        self.metric, self.tolerance = metric, tolerance

    def correct(self, value: Any, reference: Any) -> bool:
        """Whether the answer is the reference: `exact_match`, and under "exact" tolerance every number equal."""
        try:
            matched = exact_match(value, reference)
            return matched and (self.tolerance == "release" or json_numbers(value) == json_numbers(reference))
        except RecursionError:  # an answer nested deeper than the reference can be
            return False

    def score_one(self, text: str, answer_json: str) -> Scored:
        try:
            reference = json.loads(answer_json)
        except (TypeError, ValueError):
            return self.failed("bad_row")
        found, value = extract_answer(text)
        if not found:
            return self.failed("no_answer")
        correct = self.correct(value, reference)
        verdict = "correct" if correct else "wrong"
        if self.metric == "es":
            return Scored(edit_similarity(value, reference), verdict)
        return Scored(1.0 if correct else 0.0, verdict)

    def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
        tasks = _tasks(columns, len(texts))
        return [
            SKIPPED if task == ROUNDTRIP_TASK else self.score_one(text, answer_json)
            for text, answer_json, task in zip(texts, columns["answer_json"], tasks, strict=True)
        ]


class RTCERoundTripReward(PooledReward):
    """The round trip in one answer, `{"output": z^, "decoded": x^}` (`tracegen.tasks.roundtrip_prompt`): 1.0 when
    it holds, else `failure_reward`. Columns: `x` (the input), `algorithm`, `freq_json` (the frequency table shown
    with the code, JSON or "null"); rows whose `task` is not `roundtrip` are not applicable (None).

    Options:
    - `check`: "both" (x^ == x, and the reference decoder, run in the sandbox on z^, returns x), "model" (only
      x^ == x: pure self-consistency, no execution; the identity map z^ = x games it, so train with it only beside
      an executed check) or "executed" (only the sandboxed decoder on z^). The decoder accepts any z^ that decodes
      to x, not only the encoder's output: RLE [[x, 1]] and LZW's raw byte codes round-trip as well as the true
      encoding; `rtce_answer_reward` on O/P Pred rows rewards the true encoding itself;
    - `timeout_s`, `memory_mb`, `workers` (None: one per core): sandbox limits of one decoder run;
    - `failure_reward`.

    Verdicts: `roundtrip`, `no_answer` (no object with `output`), `no_decoded` (no string `decoded`),
    `self_inconsistent` (x^ != x), `decoded_mismatch` (the decoder returns another string), `decoder_error` (it
    raises, or returns no string), `timeout`, `memory`, `killed` (a hostile z^), `bad_row` (an unknown algorithm or a
    frequency table the decoder cannot use).
    """

    name = "rtce_roundtrip_reward"
    required_columns = ("x", "algorithm", "freq_json")

    def __init__(
        self,
        check: Check = "both",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        memory_mb: int = 512,
        workers: int | None = None,
        failure_reward: float = 0.0,
    ) -> None:
        super().__init__(failure_reward, workers=workers, timeout_s=timeout_s, memory_mb=memory_mb)
        if check not in ("both", "model", "executed"):
            raise ValueError(f"check must be 'both', 'model' or 'executed', got {check!r}")
        self.check = check

    def parse(self, text: str, x: str) -> Scored | str:
        """The z^ of a completion as JSON text when it still needs executing, else its final score."""
        obj = find_output_object(strip_code_fences(answer_region(text)))
        if obj is None:
            return self.failed("no_answer")
        if self.check != "executed":
            decoded = obj.get("decoded")
            if not isinstance(decoded, str):
                return self.failed("no_decoded")
            if decoded != x:
                return self.failed("self_inconsistent")
            if self.check == "model":
                return Scored(1.0, "roundtrip")
        try:
            return json.dumps(obj["output"], ensure_ascii=False)
        except (ValueError, RecursionError):  # nested past what the encoder takes
            return self.failed("decoder_error")

    def judged(self, result: SandboxResult) -> Scored:
        """The score of one decoder run."""
        if result.verdict in _SANDBOX_VERDICTS:
            return self.failed(_SANDBOX_VERDICTS[result.verdict])
        report = result.return_value
        if result.verdict != SandboxVerdict.OK or not isinstance(report, dict) or report.get("type") != "str":
            return self.failed("decoder_error")
        return Scored(1.0, "roundtrip") if report.get("equal") is True else self.failed("decoded_mismatch")

    def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
        tasks = _tasks(columns, len(texts))
        scored: list[Scored | None] = [None] * len(texts)
        pending: list[tuple[int, SandboxJob]] = []
        rows = zip(texts, columns["x"], columns["algorithm"], columns["freq_json"], tasks, strict=True)
        for i, (text, x, algorithm, freq_json, task) in enumerate(rows):
            if task is not None and task != ROUNDTRIP_TASK:
                scored[i] = SKIPPED
                continue
            parsed = self.parse(text, x)
            if isinstance(parsed, Scored):
                scored[i] = parsed
                continue
            try:
                source = get_algorithm(algorithm).decoder_source(json.loads(freq_json)) + DECODE_SOURCE
            except (TypeError, ValueError):  # an unknown algorithm, a missing or broken frequency table
                scored[i] = self.failed("bad_row")
                continue
            pending.append((i, SandboxJob(source, "roundtrip_decode", [parsed, x])))
        results = self.run_jobs([job for _, job in pending])
        for (i, _), result in zip(pending, results, strict=True):
            scored[i] = self.judged(result)
        return [s if s is not None else self.failed("decoder_error") for s in scored]


__all__ = ["DECODE_SOURCE", "RTCEAnswerReward", "RTCERoundTripReward", "json_numbers"]
