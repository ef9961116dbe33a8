"""Every dataset the toolkit writes, made with its own `kt` command, loads with `datasets.load_dataset(DIR)` without a
warning, names its shards as `datasets` does, carries a full card (license, task and size categories, dataset_info
with features and split sizes, the command) and ids of the one scheme; stock `trl sft` trains on the RTCE SFT corpus.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml
from datasets import DatasetDict, load_dataset

from kt_train.cli import main
from kt_train.models import DEFAULT_MODEL, hub_id_of, resolve_model_path

ID = re.compile(r"[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*")
SHARD = re.compile(r"(train|test)-\d{5}-of-\d{5}\.parquet")
TEXT = "The quick brown fox jumps over the lazy dog. " * 60


def _kt(*argv: str | Path) -> None:
    assert main([str(a) for a in argv]) == 0, argv


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> dataset folder, each made by the command a user runs."""
    root = tmp_path_factory.mktemp("datasets")
    (root / "text.txt").write_text(TEXT)
    _kt("dsl", "generate", "--num-pairs", "12", "--seed", "3", "--output", root / "corpus", "--quiet")
    _kt("dsl", "eval-set", "--bytes", "300", "--seed", "5", "--output", root / "eval-set", "--quiet")
    _kt("dsl", "export-chat", "--corpus", root / "corpus", "--output", root / "chats")
    _kt("kt-data", "--modality", "text", "--input", root / "text.txt", "--output", root / "kt-data", "--quiet")
    _kt("rtce", "build", "--output", root / "rtce", "--seed", "42", "--num-inputs", "4")
    _kt("traces", "collect", "--benchmark", root / "rtce", "--output", root / "traces", "--workers", "2", "--quiet")
    _kt("traces", "translate", "--traces", root / "traces", "--output", root / "translations", "--quiet")
    sft = root / "sft"
    _kt("sft-data", "build", "--translations", root / "translations", "--benchmark", root / "rtce", "--output", sft)
    suite = ("--k-max", "4", "--d-max", "3", "--max-skeletons", "2", "--instances", "1", "--quiet")
    _kt("nl", "suite", "--output", root / "nl-suite", *suite)
    _kt("nl", "ft-data", "--output", root / "nl-ft", "--pairs-per-depth", "5", "--depths", "2", "3")
    return {
        "dsl corpus": root / "corpus",
        "dsl eval-set": root / "eval-set",
        "seqcoder chats": root / "chats",
        "kt-data": root / "kt-data",
        "rtce benchmark": root / "rtce" / "hf",
        "rtce sft (all)": sft / "all",
        "rtce sft (rle)": sft / "rle",
        "nl suite": root / "nl-suite",
        "nl ft-data": root / "nl-ft",
    }


def load_quietly(directory: Path, caplog: pytest.LogCaptureFixture) -> tuple[DatasetDict, list[str]]:
    """The dataset and every warning `datasets` gave while loading it (Python warnings and its logger's)."""
    caplog.clear()
    datasets_logger = logging.getLogger("datasets")
    datasets_logger.addHandler(caplog.handler)  # datasets' logger does not propagate to the root logger
    try:
        with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, logger="datasets"):
            warnings.simplefilter("always")
            dataset = load_dataset(str(directory), cache_dir=str(directory.parent / f".hf-cache-{directory.name}"))
    finally:
        datasets_logger.removeHandler(caplog.handler)
    said = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return dataset, said


def card_metadata(directory: Path) -> dict:
    text = (directory / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{directory}: the card has no YAML header"
    return yaml.safe_load(text.split("---\n")[1])


@pytest.mark.parametrize(
    "name",
    [
        "dsl corpus",
        "dsl eval-set",
        "seqcoder chats",
        "kt-data",
        "rtce benchmark",
        "rtce sft (all)",
        "rtce sft (rle)",
        "nl suite",
        "nl ft-data",
    ],
)
def test_every_dataset_loads_without_a_warning(
    made: dict[str, Path], name: str, caplog: pytest.LogCaptureFixture
) -> None:
    directory = made[name]
    dataset, said = load_quietly(directory, caplog)
    assert not said, f"{name}: {said}"
    meta = card_metadata(directory)
    assert meta["license"] and meta["task_categories"] and meta["size_categories"], meta
    splits = {split["name"]: split for split in meta["dataset_info"]["splits"]}
    assert set(splits) == set(dataset), (splits, dataset)
    for split, rows in dataset.items():
        assert splits[split]["num_examples"] == len(rows) and splits[split]["num_bytes"] > 0
    assert [f["name"] for f in meta["dataset_info"]["features"]] == next(iter(dataset.values())).column_names
    shards = sorted(p.name for p in (directory / "data").iterdir())
    assert shards and all(SHARD.fullmatch(shard) for shard in shards), shards
    assert "Made with:" in (directory / "README.md").read_text() and "kt " in (directory / "README.md").read_text()
    for rows in dataset.values():
        ids = rows["id"]
        assert len(set(ids)) == len(ids) and all(ID.fullmatch(i) for i in ids), ids[:5]


def test_the_check_sees_an_incomplete_card(made: dict[str, Path], tmp_path: Path, caplog) -> None:
    """The warning the issue saw (splits without num_bytes) is caught by `load_quietly`, so the test above can fail."""
    broken = tmp_path / "broken"
    (broken / "data").mkdir(parents=True)
    for shard in (made["dsl corpus"] / "data").iterdir():
        (broken / "data" / shard.name).write_bytes(shard.read_bytes())
    card = (made["dsl corpus"] / "README.md").read_text()
    (broken / "README.md").write_text(re.sub(r"\n +num_bytes: \d+", "", card))
    _, said = load_quietly(broken, caplog)
    assert any("Ignoring part of dataset_info" in line for line in said), said


def test_sft_cards_warn_over_trls_default_max_length(made: dict[str, Path]) -> None:
    """The RTCE chats are longer than TRL's default 1,024 tokens: the card says how long, in whose tokens, and what
    `--max_length` holds them; the SeqCoder chats are short and get no warning."""
    rtce = (made["rtce sft (all)"] / "README.md").read_text()
    assert f"in tokens of `{hub_id_of(DEFAULT_MODEL)}`" in rtce
    assert "**Warning:**" in rtce and "TRL's default `max_length`" in rtce
    assert re.search(r"Train with `--max_length \d+`", rtce)
    chats = (made["seqcoder chats"] / "README.md").read_text()
    assert "## Length in tokens" in chats and "**Warning:**" not in chats


@pytest.mark.slow
def test_stock_trl_sft_trains_on_the_rtce_sft_corpus(made: dict[str, Path]) -> None:
    """Stock `trl sft` reads the corpus as it is. It trains one step at 512 tokens, cutting the row: a step at the
    card's `--max_length` (8,192 here), in TRL's default bf16, took over 15 minutes of CI's CPU; that the card's
    number holds the rows is `test_sft_cards_warn_over_trls_default_max_length`'s and the corpus builder's job."""
    meta = card_metadata(made["rtce sft (rle)"])
    assert meta["dataset_info"]["splits"][0]["num_examples"] > 0
    out = made["rtce sft (rle)"].parent / "trl-sft"
    command = [
        str(Path(sys.executable).with_name("trl")),
        "sft",
        "--model_name_or_path",
        resolve_model_path(DEFAULT_MODEL),
        "--dataset_name",
        str(made["rtce sft (rle)"]),
        "--output_dir",
        str(out),
        "--max_steps",
        "1",
        "--per_device_train_batch_size",
        "1",
        "--max_length",
        "512",
        "--use_peft",
        "--lora_r",
        "4",
        "--report_to",
        "none",
        "--save_strategy",
        "no",
        "--use_cpu",
        "true",
        "--bf16",
        "false",  # TRL's default bf16 is emulated on a CPU without AVX512-BF16: ~10x slower
    ]
    env = os.environ | {"HF_HUB_OFFLINE": "1", "WANDB_DISABLED": "true"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (out / "adapter_model.safetensors").is_file(), done.stderr[-2000:]
