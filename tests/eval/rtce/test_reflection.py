"""Self-reflection (paper 000, §6.2, Appendix E): pure helpers, the control flow, and the loop on the real model."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any

import pytest

from eval.rtce.reflection import (
    CRITIQUE_B_SYSTEM,
    CUT_MARKER,
    MISMATCH_NOTE,
    PLACEHOLDER,
    REPAIR_SYSTEM,
    REPAIR_USER,
    REVISION_SYSTEM,
    ReflectionConfig,
    ReflectionResult,
    RoundRecord,
    accuracy_per_round,
    canonicalize,
    critique_prompt,
    estimate_tokens,
    parse_verdict,
    prompt_char_limit,
    reflect,
    repair_prompt,
    revision_prompt,
    share_budget,
    trim_middle,
)
from kt_train.generation import SamplingConfig

SECRET = "UNIQUE_SECRET_VALUE_123"
GREEDY = SamplingConfig(temperature=0, max_new_tokens=48)


@dataclass(frozen=True)
class Item:
    """What `reflect` reads of an item."""

    id: str
    prompt: str
    answer: Any


def item(prompt: str, answer, id_: str = "x") -> Item:
    return Item(id=id_, prompt=prompt, answer=answer)


# ---- config -------------------------------------------------------------------------------------------------------


def test_config_defaults_are_the_papers_and_fields_have_help() -> None:
    config = ReflectionConfig()
    assert (config.rounds, config.critique_style, config.stop_on, config.on_mismatch) == (2, "B", "em", "annotate")
    assert (config.model_ctx, config.gen_tokens, config.safety_margin) == (8192, 512, 64)
    assert (config.chars_per_token, config.truncate_hard_chars, config.format_repair) == (1.5, 16000, True)
    assert all(f.metadata.get("help") for f in dataclasses.fields(ReflectionConfig))


@pytest.mark.parametrize(
    "bad",
    [
        {"critique_style": "A"},
        {"stop_on": "es"},
        {"on_mismatch": "force"},
        {"rounds": -1},
        {"model_ctx": 100, "gen_tokens": 90, "safety_margin": 10},
        {"chars_per_token": 0},
    ],
)
def test_config_rejects_bad_values(bad: dict) -> None:
    with pytest.raises(ValueError):
        ReflectionConfig(**bad)


# ---- verdicts -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("critique", "verdict"),
    [
        ("Findings:\n- ok\nFix:\n- none\nVERDICT: KEEP", "KEEP"),
        ("verdict: revise", "REVISE"),
        ("**VERDICT:** KEEP", "KEEP"),
        ("Verdict - `keep`.", "KEEP"),
        ("VERDICT:\n\nKeep", "KEEP"),
        ("VERDICT: **REVISE**", "REVISE"),
        ("End with VERDICT: KEEP or VERDICT: REVISE.", "REVISE"),  # an echo of the instruction: the last one
        ("VERDICT: REVISE\n... on second thought ...\nVERDICT: KEEP", "KEEP"),
        ("VERDICT: KEEPING it", "REVISE"),  # not the word KEEP
        ("I would keep this answer.", "REVISE"),  # no verdict
        ("", "REVISE"),
        (None, "REVISE"),
    ],
)
def test_parse_verdict(critique: str | None, verdict: str) -> None:
    assert parse_verdict(critique) == verdict


# ---- budgeting ------------------------------------------------------------------------------------------------------


def test_trim_middle_keeps_head_and_tail() -> None:
    text = "abcdefghij" * 10
    assert trim_middle(text, 100) == text
    cut = trim_middle(text, 30)
    keep = 30 - len(CUT_MARKER)
    assert cut == text[: keep // 2] + CUT_MARKER + text[-(keep - keep // 2) :]
    assert len(cut) == 30
    assert trim_middle(text, 5) == text[-5:]  # no room for the marker
    assert trim_middle(text, 0) == ""


def test_share_budget_keeps_short_fields_and_cuts_long_ones_equally() -> None:
    fields = {"a": "x" * 10, "b": "y" * 100, "c": "z" * 100}
    assert share_budget(fields, 210) == fields
    shared = share_budget(fields, 110)
    assert list(shared) == ["a", "b", "c"]
    assert [len(v) for v in shared.values()] == [10, 50, 50]
    assert shared["a"] == fields["a"] and CUT_MARKER in shared["b"]
    assert [len(v) for v in share_budget(fields, 0).values()] == [0, 0, 0]


def test_prompt_char_limit_exact() -> None:
    assert prompt_char_limit(ReflectionConfig()) == 11424  # (8192 - 512 - 64) * 1.5
    assert prompt_char_limit(ReflectionConfig(model_ctx=400, gen_tokens=40, safety_margin=10)) == 525
    assert prompt_char_limit(ReflectionConfig(model_ctx=400, gen_tokens=40, truncate_hard_chars=300)) == 300
    quarter = ReflectionConfig(model_ctx=400, gen_tokens=40, safety_margin=10, chars_per_token=0.75)
    assert prompt_char_limit(quarter) == 262  # floor(350 * 0.75)
    assert estimate_tokens("x" * 10, 1.5) == 7


def test_fit_prompt_trims_to_the_exact_budget() -> None:
    config = ReflectionConfig(model_ctx=400, gen_tokens=40, safety_margin=10)
    short, length = repair_prompt("answer 3", config)
    assert short == REPAIR_SYSTEM + "\n\n" + REPAIR_USER.format(raw_text="answer 3")
    assert length == 40
    raw = "H" * 500 + "T" * 500
    prompt, length = repair_prompt(raw, config)
    assert len(prompt) == 525 and length == 40
    assert CUT_MARKER in prompt and "HHH" in prompt and "TTT" in prompt
    assert estimate_tokens(prompt, 1.5) + length + 10 <= 400
    hard = ReflectionConfig(model_ctx=4000, gen_tokens=40, truncate_hard_chars=400)
    assert len(repair_prompt(raw, hard)[0]) == 400


def test_fit_prompt_shrinks_generation_when_the_fixed_text_is_too_long() -> None:
    fixed = REPAIR_SYSTEM + "\n\n" + REPAIR_USER.format(raw_text="")
    tokens = estimate_tokens(fixed, 1.5)
    config = ReflectionConfig(model_ctx=tokens + 10 + 20, gen_tokens=40, safety_margin=10)
    prompt, length = repair_prompt("some text", config)
    assert prompt == fixed and length == 20  # what is left
    with pytest.raises(ValueError, match="does not fit"):
        repair_prompt("x", ReflectionConfig(model_ctx=tokens, gen_tokens=40, safety_margin=10))


def test_every_prompt_fits_with_long_fields() -> None:
    config = ReflectionConfig(model_ctx=1000, gen_tokens=100, safety_margin=20)
    conversation, draft, feedback = "C" * 5000, "D" * 3000, "F" * 200
    for prompt, length in [
        critique_prompt(conversation, draft, config),
        revision_prompt(conversation, draft, feedback, config),
        repair_prompt(draft, config),
    ]:
        assert len(prompt) == prompt_char_limit(config) == 1320
        assert estimate_tokens(prompt, 1.5) + length + 20 <= 1000
    prompt, _ = revision_prompt(conversation, draft, feedback, config)
    assert "F" * 200 in prompt  # the short field is kept whole


# ---- canonicalization -----------------------------------------------------------------------------------------------


def test_canonicalize() -> None:
    messy = 'Reasoning...\n[ANSWER]\n```json\n{"output": {"return": [1, "a"]}}\n```\n[/ANSWER] trailing'
    assert canonicalize(messy) == (True, [1, "a"], '[ANSWER]\n{"output": [1, "a"]}\n[/ANSWER]')
    assert canonicalize('{"output": "é"}') == (True, "é", '[ANSWER]\n{"output": "é"}\n[/ANSWER]')
    assert canonicalize('[ANSWER]{"output": null}[/ANSWER]')[:2] == (True, None)
    assert canonicalize("the answer is 3") == (False, None, "the answer is 3")  # needs a repair
    assert canonicalize(None) == (False, None, "")
    assert canonicalize("{{{ [ANSWER] garbage") == (False, None, "{{{ [ANSWER] garbage")


# ---- accuracy per round ---------------------------------------------------------------------------------------------


def _result(ems: list[bool], rounds: int = 2) -> ReflectionResult:
    records = [RoundRecord(r, None, None, None, None, "", None, em, em) for r, em in enumerate(ems)]
    return ReflectionResult("i", records, "", None, ems[-1], ems[-1], len(ems) - 1 < rounds, None)


def test_accuracy_per_round_with_early_stop() -> None:
    results = [_result([True]), _result([False, True]), _result([False, False, False])]
    assert accuracy_per_round(results) == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    assert accuracy_per_round(results, rounds=3) == pytest.approx([1 / 3, 2 / 3, 2 / 3, 2 / 3])
    assert accuracy_per_round([_result([True], rounds=2)]) == [1.0]
    assert accuracy_per_round([]) == []


# ---- control flow with a scripted backend ---------------------------------------------------------------------------


class ScriptedBackend:
    """A test double ONLY for the control flow (which calls are made, in which batches, what is kept).

    It answers each prompt by its role (critique, revision, repair, told apart by the system text that opens the
    prompt) from scripted lists, one text per call in order, and records every call. Model behaviour is tested on
    the real model below.
    """

    def __init__(self, critique=(), revision=(), repair=()) -> None:
        self.scripts = {"critique": list(critique), "revision": list(revision), "repair": list(repair)}
        self.calls: list[tuple[str, list[str], SamplingConfig]] = []

    def generate(self, prompts: list[str], sampling: SamplingConfig) -> list[list[str] | None]:
        roles = {
            "critique": CRITIQUE_B_SYSTEM,
            "revision": REVISION_SYSTEM,
            "repair": REPAIR_SYSTEM,
        }
        role = next(name for name, system in roles.items() if prompts[0].startswith(system))
        assert all(p.startswith(roles[role]) for p in prompts)
        self.calls.append((role, prompts, sampling))
        out = [self.scripts[role].pop(0) for _ in prompts]
        return [None if text is None else [text] for text in out]

    def roles(self) -> list[tuple[str, int]]:
        return [(role, len(prompts)) for role, prompts, _ in self.calls]


def test_zero_shot_match_stops_before_any_call() -> None:
    backend = ScriptedBackend()
    [result] = reflect([item("q", 3)], ['[ANSWER]{"output": 3}[/ANSWER]'], backend, GREEDY, progress=False)
    assert backend.calls == []
    assert (result.em, result.stopped_early, len(result.rounds), result.annotation) == (True, True, 1, None)


def test_keep_skips_the_revision() -> None:
    backend = ScriptedBackend(critique=["Findings: fine. VERDICT: KEEP"])
    config = ReflectionConfig(rounds=1)
    [result] = reflect([item("q", 3)], ['{"output": 4}'], backend, GREEDY, config, progress=False)
    assert backend.roles() == [("critique", 1)]
    record = result.rounds[1]
    assert (record.verdict, record.revision, record.prediction, record.em) == ("KEEP", None, 4, False)
    assert record.draft == result.rounds[0].draft == '[ANSWER]\n{"output": 4}\n[/ANSWER]'
    assert result.annotation == MISMATCH_NOTE and result.prediction == 4 and not result.stopped_early


def test_batches_early_stop_and_repair() -> None:
    """Round 1: both revised, item a fixed (after a repair), item b not; round 2 runs for b alone."""
    backend = ScriptedBackend(
        critique=["VERDICT: REVISE", "no verdict at all", "VERDICT: REVISE"],
        revision=["it is 3", '{"output": 5}', '{"output": 6}'],
        repair=['[ANSWER]{"output": 3}[/ANSWER]'],
    )
    items = [item("qa", 3, "a"), item("qb", 7, "b")]
    a, b = reflect(items, ['{"output": 1}', '{"output": 2}'], backend, GREEDY, progress=False)
    assert backend.roles() == [("critique", 2), ("revision", 2), ("repair", 1), ("critique", 1), ("revision", 1)]
    assert "it is 3" in backend.calls[2][1][0]  # the repair saw the raw revision
    assert [r.em for r in a.rounds] == [False, True] and a.stopped_early and a.em
    assert a.rounds[1].repair == '[ANSWER]{"output": 3}[/ANSWER]' and a.rounds[1].revision == "it is 3"
    assert [r.prediction for r in b.rounds] == [2, 5, 6] and not b.stopped_early and not b.em
    assert accuracy_per_round([a, b]) == [0.0, 0.5, 0.5]
    assert backend.calls[0][2].stop is None and all(s.n == 1 for _, _, s in backend.calls)
    revision_prompt_b = backend.calls[4][1][0]
    assert '[ANSWER]\n{"output": 5}\n[/ANSWER]' in revision_prompt_b and "qb" in revision_prompt_b


@pytest.mark.parametrize(
    ("policy", "draft", "prediction", "found", "annotation"),
    [
        ("keep", '[ANSWER]\n{"output": 9}\n[/ANSWER]', 9, True, None),
        ("annotate", '[ANSWER]\n{"output": 9}\n[/ANSWER]', 9, True, MISMATCH_NOTE),
        ("placeholder", PLACEHOLDER, None, False, None),
    ],
)
def test_on_mismatch(policy: str, draft: str, prediction, found: bool, annotation) -> None:
    backend = ScriptedBackend(critique=["VERDICT: REVISE"], revision=['{"output": 9}'])
    config = ReflectionConfig(rounds=1, on_mismatch=policy)
    [result] = reflect([item("q", 3)], ['{"output": 4}'], backend, GREEDY, config, progress=False)
    assert (result.draft, result.prediction, result.found, result.em) == (draft, prediction, found, False)
    assert result.annotation == annotation
    assert result.rounds[-1].prediction == 9  # the record keeps what the model said


def test_stop_on_none_runs_every_round() -> None:
    backend = ScriptedBackend(critique=["VERDICT: KEEP"] * 2)
    config = ReflectionConfig(rounds=2, stop_on="none")
    [result] = reflect([item("q", 3)], ['{"output": 3}'], backend, GREEDY, config, progress=False)
    assert backend.roles() == [("critique", 1), ("critique", 1)]
    assert [r.em for r in result.rounds] == [True, True, True] and not result.stopped_early


def test_bad_output_never_crashes_and_repair_is_optional() -> None:
    backend = ScriptedBackend(critique=[None, ""], revision=[None, "\x00 }{ garbage"], repair=[None, None])
    items = [item("q1", 1, "1"), item("q2", 2, "2")]
    results = reflect(items, [None, "garbage {"], backend, GREEDY, ReflectionConfig(rounds=1), progress=False)
    # round 0: only the non-empty draft is repaired; round 1: both revised (no verdict); the empty one not repaired
    assert backend.roles() == [("repair", 1), ("critique", 2), ("revision", 2), ("repair", 1)]
    assert all(not r.found and not r.em for r in results)
    assert [r.rounds[1].verdict for r in results] == ["REVISE", "REVISE"]
    backend = ScriptedBackend(critique=["VERDICT: REVISE"], revision=["still no json"])
    config = ReflectionConfig(rounds=1, format_repair=False)
    reflect([item("q", 1)], ["no json"], backend, GREEDY, config, progress=False)
    assert backend.roles() == [("critique", 1), ("revision", 1)]


def test_no_prompt_holds_the_reference() -> None:
    reference_json = json.dumps({"output": SECRET})
    backend = ScriptedBackend(
        critique=["VERDICT: REVISE"] * 2, revision=["maybe wrong", '{"output": "w"}'], repair=["x", "y"]
    )
    items = [item("Predict the output. " + "code " * 50, SECRET)]
    [result] = reflect(items, ["I do not know"], backend, GREEDY, progress=False)
    prompts = [p for _, batch, _ in backend.calls for p in batch]
    assert len(prompts) == 6
    assert not any(SECRET in p or reference_json in p for p in prompts)
    assert SECRET not in json.dumps(result.to_dict())


# ---- the loop on the real model -------------------------------------------------------------------------------------


class Recording:
    """Forwards to the real backend and keeps each prompt with its generation length (not a mock)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.sent: list[tuple[str, int]] = []

    def generate(self, prompts: list[str], sampling: SamplingConfig) -> list[list[str] | None]:
        self.sent += [(p, sampling.max_new_tokens) for p in prompts]
        return self.backend.generate(prompts, sampling)


@pytest.fixture(scope="module")
def real_backend():
    from kt_train.generation import get_backend
    from kt_train.models import DEFAULT_MODEL

    return get_backend("transformers", DEFAULT_MODEL, dtype="float32")


@pytest.mark.slow
def test_reflect_on_the_real_model(real_backend) -> None:
    answer_format = 'Answer as:\n[ANSWER]\n{"output": <your answer>}\n[/ANSWER]'
    items = [
        item("The quick brown fox jumps over the lazy dog. " * 40 + f"What is 1 + 2? {answer_format}", 3, "sum"),
        item(f"Repeat the word hello. {answer_format}", SECRET, "word"),
    ]
    config = ReflectionConfig(rounds=1, gen_tokens=32, model_ctx=700, safety_margin=64)
    recording = Recording(real_backend)
    results = reflect(items, ["I think it is four.", None], recording, GREEDY, config, progress=False)

    assert [r.id for r in results] == ["sum", "word"]
    for result in results:
        assert 1 <= len(result.rounds) <= 2 and [r.round for r in result.rounds] == list(range(len(result.rounds)))
        assert len(result.rounds) == 2 or result.rounds[0].em
        assert result.rounds[-1].verdict in (None, "KEEP", "REVISE")
        data = result.to_dict()
        assert json.loads(json.dumps(data)) == data
    assert len(accuracy_per_round(results, rounds=1)) == 2
    assert recording.sent
    tokenizer = real_backend.tokenizer
    for prompt, length in recording.sent:
        assert len(prompt) <= config.truncate_hard_chars and length <= config.gen_tokens
        assert math.ceil(len(prompt) / config.chars_per_token) + length + config.safety_margin <= config.model_ctx
        chat = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True)
        chat = chat["input_ids"] if isinstance(chat, dict) or hasattr(chat, "keys") else chat
        assert len(chat) + length <= config.model_ctx  # the estimate is conservative for this tokenizer too
        assert SECRET not in prompt
    assert any(CUT_MARKER in prompt for prompt, _ in recording.sent)  # the long conversation was trimmed
