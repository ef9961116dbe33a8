"""The reward contract (kt_train.rewards): completion texts, verdict logging, skipped rows, failures, the sandbox pool
of pooled rewards, format_reward and the registry of domain rewards (entry points)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest

import kt_train.rewards as rewards
from kt_train.rewards import (
    REWARD_ERROR,
    SKIPPED,
    PooledReward,
    Reward,
    Scored,
    completion_text,
    format_reward,
    get_reward,
    get_reward_funcs,
    reward_registry,
)
from kt_train.sandbox import SandboxJob

DOMAIN_REWARDS = {
    "kt_compression": "KTCompressionReward",
    "rtce_answer": "RTCEAnswerReward",
    "rtce_roundtrip": "RTCERoundTripReward",
    "nl_roundtrip": "NLRoundTripReward",
}


class ParityReward(Reward):
    """Test reward: 1.0 when the completion is the row's `number` written out and even, 0.0 when odd; skips rows whose
    `number` is None; a non-number text fails."""

    name = "parity_reward"
    required_columns = ("number",)

    def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
        scored = []
        for text, number in zip(texts, columns["number"], strict=True):
            if number is None:
                scored.append(SKIPPED)
            elif text.strip() != str(number):
                scored.append(self.failed("mismatch"))
            else:
                scored.append(Scored(1.0 if number % 2 == 0 else 0.0, "even" if number % 2 == 0 else "odd"))
        return scored


class SquareReward(PooledReward):
    """Test pooled reward: the sandbox squares the completion's integer; the reward is 1.0 when that is `square`."""

    name = "square_reward"
    required_columns = ("square",)

    def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
        jobs = [SandboxJob("def sq(t):\n    return int(t) ** 2", "sq", [t]) for t in texts]
        results = self.run_jobs(jobs)
        return [
            Scored(1.0, "ok")
            if r.return_value == s
            else self.failed(str(r.verdict) if r.return_value is None else "no")
            for r, s in zip(results, columns["square"], strict=True)
        ]


class Recorder:
    """Collects what a reward logs through TRL's log_metric / log_extra."""

    def __init__(self) -> None:
        self.metrics: dict[str, float] = {}
        self.extra: dict[str, list[Any]] = {}

    def metric(self, name: str, value: float) -> None:
        self.metrics[name] = value

    def column(self, name: str, values: list[Any]) -> None:
        self.extra[name] = values


def chat(content: Any) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": content}]


def test_completion_text_reads_strings_and_chat_messages() -> None:
    assert completion_text("plain") == "plain"
    assert completion_text(chat("from chat")) == "from chat"
    assert completion_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]) == "a"
    assert completion_text(chat([{"type": "text", "text": "x"}, {"type": "text", "text": "y"}])) == "xy"
    for malformed in (chat(None), [], None, 42, [{"role": "assistant"}], chat(7)):
        assert completion_text(malformed) == ""


def test_reward_scores_logs_verdict_shares_and_skips_rows() -> None:
    reward, log = ParityReward(failure_reward=-1.0), Recorder()
    completions = ["2", chat("3"), "4", "nope", chat(None), "9"]
    numbers = [2, 3, 4, 5, 6, None]
    out = reward(
        prompts=["p"] * 6, completions=completions, number=numbers, log_metric=log.metric, log_extra=log.column
    )
    assert out == [1.0, 0.0, 1.0, -1.0, -1.0, None]
    # shares among the 5 scored rows; the skipped row is not counted
    assert log.metrics == {"parity_reward/even": 0.4, "parity_reward/mismatch": 0.4, "parity_reward/odd": 0.2}
    assert log.extra == {"parity_reward_verdict": ["even", "odd", "even", "mismatch", "mismatch", "not_applicable"]}
    assert reward.__name__ == "parity_reward"


def test_reward_without_loggers_and_extra_trl_arguments() -> None:
    out = ParityReward()(prompts=["p"], completions=["2"], completion_ids=[[1, 2]], number=[2], trainer_state=object())
    assert out == [1.0]


def test_missing_column_is_a_config_error() -> None:
    with pytest.raises(ValueError, match=r"parity_reward needs the dataset column\(s\) \['number'\]"):
        ParityReward()(prompts=["p"], completions=["2"], other=[1])


def test_a_scoring_exception_fails_the_batch_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(ParityReward):
        def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
            raise KeyError("boom")

    class Short(ParityReward):
        def score(self, texts: list[str], columns: Mapping[str, list[Any]]) -> list[Scored]:
            return []

    log = Recorder()
    with caplog.at_level(logging.WARNING, logger="kt_train.rewards"):
        assert Broken(failure_reward=-0.5)(completions=["1", "2"], number=[1, 2], log_metric=log.metric) == [-0.5] * 2
        assert Short()(completions=["1"], number=[1]) == [0.0]
    assert log.metrics == {f"parity_reward/{REWARD_ERROR}": 1.0}
    assert len(caplog.records) == 2 and "KeyError" in caplog.records[0].getMessage()


def test_pooled_reward_runs_jobs_in_the_sandbox_and_restarts_after_close() -> None:
    reward = SquareReward(workers=2, timeout_s=2.0)
    try:
        assert reward(completions=["3", chat("4"), "x"], square=[9, 15, 0]) == [1.0, 0.0, 0.0]
        assert reward.run_jobs([]) == []
        reward.close()
        assert reward._pool is None
        assert reward(completions=["5"], square=[25]) == [1.0]
    finally:
        reward.close()


def test_format_reward_full_match_after_strip() -> None:
    log = Recorder()
    pattern = r"\d+( \d+)*"
    out = format_reward(
        completions=["  1 2 3\n", chat("12"), "1 2 x", "", chat(None)],
        format_pattern=[pattern] * 5,
        log_metric=log.metric,
    )
    assert out == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert log.metrics == {"format_reward/bad_format": 0.6, "format_reward/ok": 0.4}
    assert format_reward(completions=["a\nb"], format_pattern=["a.b"]) == [1.0]  # DOTALL


def test_registry_finds_the_domain_rewards_by_entry_point() -> None:
    registry = reward_registry()
    assert set(DOMAIN_REWARDS) | {"format"} <= set(registry)
    for name, class_name in DOMAIN_REWARDS.items():
        for spelled in (name, f"{name}_reward"):
            reward = get_reward(spelled)
            assert type(reward).__name__ == class_name
            assert reward.__name__ == f"{name}_reward"
    assert get_reward("kt_compression", prior="gzip").prior == "gzip"


def test_default_rewards_import_from_the_module() -> None:
    from kt_train.rewards import kt_compression_reward, nl_roundtrip_reward, rtce_answer_reward

    assert type(kt_compression_reward).__name__ == "KTCompressionReward"
    assert kt_compression_reward is rewards.kt_compression_reward  # one instance per name
    assert rtce_answer_reward.name == "rtce_answer_reward" and nl_roundtrip_reward.name == "nl_roundtrip_reward"
    assert rewards.format_reward is format_reward
    with pytest.raises(AttributeError):
        rewards.unknown_reward  # noqa: B018


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("no_such", {}, "unknown reward 'no_such'"),
        ("kt_compression", {"no_such_option": 1}, "reward 'kt_compression'"),
        ("kt_compression", {"shaping": "cubic"}, "shaping must be one of"),
        ("kt_compression", {"mode": "python", "prior": "uniform"}, "prior 'uniform'"),
        ("rtce_answer", {"metric": "bleu"}, "metric must be"),
        ("rtce_roundtrip", {"check": "maybe"}, "check must be"),
        ("nl_roundtrip", {"extractor": "sexpr"}, "not a extractor"),
        ("nl_roundtrip", {"extractor": "m@/no/such/adapter"}, "no adapter_config.json"),
        ("nl_roundtrip", {"shots": 5}, "shots must be"),
    ],
)
def test_bad_names_and_options_are_value_errors(name: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        get_reward(name, **options)


def test_get_reward_funcs_applies_options_by_name() -> None:
    funcs = get_reward_funcs(
        ["format_reward", "kt_compression_reward", "rtce_answer"],
        {"kt_compression": {"shaping": "binary"}, "rtce_answer_reward": {"metric": "es"}},
    )
    assert [f.__name__ for f in funcs] == ["format_reward", "kt_compression_reward", "rtce_answer_reward"]
    assert funcs[1].shaping == "binary" and funcs[2].metric == "es"
    with pytest.raises(ValueError, match="not in reward_funcs: nl_roundtrip"):
        get_reward_funcs(["format"], {"nl_roundtrip": {}})
