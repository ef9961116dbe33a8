"""rtce_answer_reward and rtce_roundtrip_reward on hand-made completions: correct, wrong, malformed, hostile (z^ that
makes the sandboxed decoder loop or blow up), mixed batches and the mixed dataset of tracegen.rl_data."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from rapidfuzz.distance import Levenshtein

from eval.rewards.rtce import RTCEAnswerReward, RTCERoundTripReward
from tracegen.algorithms import ALGORITHMS, get_algorithm
from tracegen.benchmark import build_benchmark
from tracegen.rl_data import rtce_rl_rows
from tracegen.tasks import TASKS, make_task

X = "hello hello world"


def chat(content: Any) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": content}]


def answer(value: Any) -> str:
    return f'Let me think.\n[ANSWER]\n{{"output": {json.dumps(value)}}}\n[/ANSWER]'


def roundtrip(z: Any, decoded: Any) -> str:
    return f"[ANSWER]\n{json.dumps({'output': z, 'decoded': decoded})}\n[/ANSWER]"


def scored(reward: Any, completions: list[Any], **columns: list[Any]) -> list[tuple[float | None, str]]:
    seen: dict[str, list[str]] = {}
    rewards = reward(completions=completions, log_extra=seen.__setitem__, **columns)
    return list(zip(rewards, seen[f"{reward.name}_verdict"], strict=True))


def encoded(name: str, x: str = X) -> tuple[Any, str]:
    """The true encoding of x (JSON) and the frequency table column."""
    algorithm = get_algorithm(name)
    return algorithm.to_json(algorithm.encode(x)), json.dumps(algorithm.freq(x))


@pytest.fixture(scope="module")
def pooled() -> Any:
    rewards = {check: RTCERoundTripReward(check=check, timeout_s=2.0, workers=2) for check in ("both", "executed")}
    yield rewards
    for reward in rewards.values():
        reward.close()


# ----- rtce_answer_reward


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_answer_reward_scores_reference_answers_one_and_others_zero(name: str) -> None:
    records = [make_task(get_algorithm(name), task, X) for task in TASKS]
    refs = [r.answer_json for r in records]
    got = scored(RTCEAnswerReward(), [answer(r.answer) for r in records], answer_json=refs)
    assert got == [(1.0, "correct")] * len(records)
    wrong = [answer("not it") if r.answer != "not it" else answer(0) for r in records]
    assert scored(RTCEAnswerReward(), wrong, answer_json=refs) == [(0.0, "wrong")] * len(records)


def test_answer_reward_edit_similarity_is_partial_credit() -> None:
    ref = [[104, 101, 108, 108, 111]]
    prediction = [104, 101, 108, 108, 112]
    canonical = (json.dumps(v, separators=(",", ":")) for v in (prediction, ref[0]))
    expected = Levenshtein.normalized_similarity(*canonical)
    [(reward, verdict)] = scored(RTCEAnswerReward(metric="es"), [answer(prediction)], answer_json=[json.dumps(ref[0])])
    assert verdict == "wrong" and 0 < reward < 1 and reward == pytest.approx(expected)
    assert RTCEAnswerReward(metric="es")(completions=[answer(ref[0])], answer_json=[json.dumps(ref[0])]) == [1.0]


def test_answer_reward_malformed_completions_are_no_answer() -> None:
    nested = "[" * 5000 + "]" * 5000
    deep = "[" * 600 + "1" + "]" * 600
    completions = [
        "",
        "garbage",
        '[ANSWER]\n{"output": [1, 2\n[/ANSWER]',
        '[ANSWER]{"answer": 5}[/ANSWER]',
        "[ANSWER]5[/ANSWER]",
        chat(None),
        [],
        chat(answer([1, 2])),
        f'[ANSWER]{{"output": {nested}}}[/ANSWER]',
        f'[ANSWER]{{"output": {deep}}}[/ANSWER]',
        f'[ANSWER]{{"output": {"9" * 5000}}}[/ANSWER]',
    ]
    got = scored(RTCEAnswerReward(failure_reward=-1.0), completions, answer_json=["[1, 2]"] * len(completions))
    assert got == [(-1.0, "no_answer")] * 7 + [
        (1.0, "correct"),
        (-1.0, "no_answer"),
        (0.0, "wrong"),
        (-1.0, "no_answer"),
    ]


def test_a_rounded_arithmetic_coding_answer_is_paid_only_under_the_release_tolerance() -> None:
    """Issue 37, item 9: the release's 1e-3 tolerance pays an AE answer rounded to 3 decimals (about 10 of its ~50
    bits); the reward is exact by default."""
    record = make_task(get_algorithm("ae"), TASKS[0], X)
    reference = json.loads(record.answer_json)
    assert isinstance(reference, float) and round(reference, 3) != reference
    rounded = [answer(round(reference, 3))]
    assert scored(RTCEAnswerReward(), rounded, answer_json=[record.answer_json]) == [(0.0, "wrong")]
    release = RTCEAnswerReward(tolerance="release")
    assert scored(release, rounded, answer_json=[record.answer_json]) == [(1.0, "correct")]
    exact = [answer(reference), answer({"a": [1, reference]})]
    refs = [record.answer_json, json.dumps({"a": [1, reference]})]
    assert scored(RTCEAnswerReward(), exact, answer_json=refs) == [(1.0, "correct")] * 2
    near = [answer({"a": [1, round(reference, 3)]}), answer({"a": [1.0, reference]})]
    assert [v for _, v in scored(RTCEAnswerReward(), near, answer_json=refs[1:] * 2)] == ["wrong", "correct"]
    with pytest.raises(ValueError, match="tolerance"):
        RTCEAnswerReward(tolerance="loose")  # type: ignore[arg-type]


def test_answer_reward_skips_roundtrip_rows() -> None:
    seen: dict[str, float] = {}
    out = RTCEAnswerReward()(
        completions=[answer([1]), roundtrip([1], "x")],
        answer_json=["[1]", "[1]"],
        task=["output_pred", "roundtrip"],
        log_metric=seen.__setitem__,
    )
    assert out == [1.0, None] and seen == {"rtce_answer_reward/correct": 1.0}


# ----- rtce_roundtrip_reward


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_true_encoding_and_decoding_round_trip_in_every_mode(name: str, pooled: dict[str, Any]) -> None:
    z, freq = encoded(name)
    columns = {"x": [X], "algorithm": [name], "freq_json": [freq]}
    for reward in (*pooled.values(), RTCERoundTripReward(check="model")):
        assert scored(reward, [roundtrip(z, X)], **columns) == [(1.0, "roundtrip")]


def test_each_check_mode_judges_what_it_says(pooled: dict[str, Any]) -> None:
    z, _ = encoded("rle")
    other, _ = encoded("rle", "hello world")
    completions = [
        roundtrip(X, X),  # the identity map: self-consistent, the decoder cannot decode it
        roundtrip(z, "hello"),  # the true encoding, a wrong decoding
        roundtrip(other, X),  # another string's encoding, decoded as x
        roundtrip([[X, 1]], X),  # not the encoder's output, yet it decodes to x
        roundtrip(z, X.upper()),  # strings compare exactly
        f'[ANSWER]{{"output": {json.dumps(z)}}}[/ANSWER]',  # no decoded string
        roundtrip(z, 5),
    ]
    columns = {"x": [X] * 7, "algorithm": ["rle"] * 7, "freq_json": ["null"] * 7}
    model = [v for _, v in scored(RTCERoundTripReward(check="model"), completions, **columns)]
    both = [v for _, v in scored(pooled["both"], completions, **columns)]
    executed = [v for _, v in scored(pooled["executed"], completions, **columns)]
    assert model == [
        "roundtrip",
        "self_inconsistent",
        "roundtrip",
        "roundtrip",
        "self_inconsistent",
        "no_decoded",
        "no_decoded",
    ]
    assert both == [
        "decoder_error",
        "self_inconsistent",
        "decoded_mismatch",
        "roundtrip",
        "self_inconsistent",
        "no_decoded",
        "no_decoded",
    ]
    assert executed == [
        "decoder_error",
        "roundtrip",
        "decoded_mismatch",
        "roundtrip",
        "roundtrip",
        "roundtrip",
        "roundtrip",
    ]


def test_rows_of_other_tasks_are_not_applicable(pooled: dict[str, Any]) -> None:
    z, _ = encoded("lzw")
    out = pooled["both"](
        completions=[roundtrip(z, X), roundtrip(z, X)],
        x=[X, X],
        algorithm=["lzw", "lzw"],
        freq_json=["null"] * 2,
        task=["roundtrip", "output_pred"],
    )
    assert out == [1.0, None]


def test_hostile_and_malformed_answers_fail_in_bounded_time_and_spare_the_rest(pooled: dict[str, Any]) -> None:
    z_lzw, _ = encoded("lzw")
    z_ae, freq_ae = encoded("ae")
    z_huffman, freq_huffman = encoded("huffman")
    long_list = "[" + ",".join(["0"] * 10**7) + "]"
    cases = [
        ("correct lzw", roundtrip(z_lzw, X), "lzw", "null", "roundtrip"),
        ("lzw blow-up", roundtrip([104, *range(256, 256 + 200_000)], X), "lzw", "null", "timeout|memory"),
        (
            "10^7-long list",
            f'[ANSWER]{{"output": {long_list}, "decoded": "{X}"}}[/ANSWER]',
            "lzw",
            "null",
            "timeout|memory",
        ),
        ("huge run", roundtrip([["a", 10**10]], X), "rle", "null", "memory|decoder_error"),
        ("enormous int", roundtrip([["a", 10**300]], X), "rle", "null", "decoder_error|memory"),
        (
            "too many digits",
            f'[ANSWER]{{"output": {"9" * 5000}, "decoded": "{X}"}}[/ANSWER]',
            "lzw",
            "null",
            "no_answer",
        ),
        ("infinite float", roundtrip(1e308 * 10, X), "ae", freq_ae, "decoder_error"),
        ("wrong type", roundtrip({"a": 1}, X), "huffman", freq_huffman, "decoder_error"),
        (
            "deeply nested",
            f'[ANSWER]{{"output": {"[" * 900 + "]" * 900}, "decoded": "{X}"}}[/ANSWER]',
            "rle",
            "null",
            "decoder_error",
        ),
        ("empty", "", "lzw", "null", "no_answer"),
        ("truncated", roundtrip(z_lzw, X)[:30], "lzw", "null", "no_answer"),
        ("none content", chat(None), "lzw", "null", "no_answer"),
        ("correct ae", chat(roundtrip(z_ae, X)), "ae", freq_ae, "roundtrip"),
        ("correct huffman", roundtrip(z_huffman, X), "huffman", freq_huffman, "roundtrip"),
    ]
    start = time.perf_counter()
    got = scored(
        pooled["both"],
        [c[1] for c in cases],
        x=[X] * len(cases),
        algorithm=[c[2] for c in cases],
        freq_json=[c[3] for c in cases],
    )
    assert time.perf_counter() - start < 30
    for (label, *_, allowed), (reward, verdict) in zip(cases, got, strict=True):
        assert verdict in allowed.split("|"), label
        assert reward == (1.0 if verdict == "roundtrip" else 0.0), label


def test_broken_rows_fail_alone(pooled: dict[str, Any]) -> None:
    z, freq = encoded("ae")
    completions = [roundtrip(z, X)] * 4
    columns = {"x": [X] * 4, "algorithm": ["ae", "ae", "zip", "ae"], "freq_json": [freq, "null", freq, "{"]}
    assert scored(pooled["both"], completions, **columns) == [(1.0, "roundtrip")] + [(0.0, "bad_row")] * 3
    got = scored(RTCEAnswerReward(), [answer([1])] * 3, answer_json=["[1]", "{not json", None])
    assert got == [(1.0, "correct"), (0.0, "bad_row"), (0.0, "bad_row")]


def test_bad_check_option() -> None:
    with pytest.raises(ValueError, match="check must be"):
        RTCERoundTripReward(check="maybe")


# ----- both rewards on the mixed dataset of tracegen.rl_data


def test_reference_answers_of_the_rl_rows_score_one(tmp_path: Path, pooled: dict[str, Any]) -> None:
    build_benchmark(tmp_path, seed=7, num_inputs=3, progress=False)
    rows = rtce_rl_rows(tmp_path)
    columns = {key: [row[key] for row in rows] for key in rows[0] if key != "prompt"}
    references = [json.loads(r["answer_json"]) for r in rows]
    completions = [
        roundtrip(ref, r["x"]) if r["task"] == "roundtrip" else answer(ref) for r, ref in zip(rows, references)
    ]
    answers = RTCEAnswerReward()(prompts=[r["prompt"] for r in rows], completions=completions, **columns)
    trips = pooled["both"](prompts=[r["prompt"] for r in rows], completions=completions, **columns)
    for row, a, t in zip(rows, answers, trips, strict=True):
        assert (a, t) == ((None, 1.0) if row["task"] == "roundtrip" else (1.0, None)), row["id"]
