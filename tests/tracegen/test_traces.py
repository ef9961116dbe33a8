"""Execution traces (tracegen.traces): real snoop in the real sandbox, no mocks."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kt_train.sandbox import SandboxConfig, SandboxPool, SandboxResult, Verdict
from tracegen.algorithms import ALGORITHMS
from tracegen.benchmark import build_benchmark
from tracegen.traces import (
    REASONS,
    SENTINEL,
    TRACES_FILE,
    TraceTask,
    collect_traces,
    count_functions,
    drop_reason,
    normalize_trace,
    trace_tasks,
)

NUM_INPUTS = 8


def _records(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (directory / TRACES_FILE).read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("rtce")
    build_benchmark(directory, seed=42, num_inputs=NUM_INPUTS, progress=False)
    return directory


@pytest.fixture(scope="module")
def timed_collection(bench: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], float]:
    """The benchmark's traces, their summary, and the seconds the collection took."""
    import time

    output = tmp_path_factory.mktemp("traces")
    start = time.monotonic()
    summary = collect_traces(bench, output, workers=2, progress=False)
    return output, summary, time.monotonic() - start


@pytest.fixture(scope="module")
def collected(timed_collection: tuple[Path, dict[str, Any], float]) -> tuple[Path, dict[str, Any]]:
    return timed_collection[0], timed_collection[1]


def test_count_functions_and_normalize() -> None:
    assert count_functions("def main_solution(x):\n    def helper(y):\n        return y\n    return helper(x)\n") == 2
    assert count_functions("f = lambda x: x\n") == 0
    text = " >>> Call\n ...... f = <function f at 0x7f3a12bc>   \n <<< Return value from main_solution: 1\n"
    assert normalize_trace(text) == ">>> Call\n...... f = <function f>\n<<< Return value from main_solution: 1"
    value = " ...... s = '0x1f at 0xZ' <object object at 0xAB12>\n"  # hex in a value is kept, the address deleted
    assert normalize_trace(value) == "...... s = '0x1f at 0xZ' <object object>"


def test_drop_reason_filters() -> None:
    ok = SandboxResult(Verdict.OK, return_value=1)
    good = f"   1 | def main_solution(x):\n{SENTINEL}1"
    assert drop_reason(ok, good, 1, 1, max_lines=10) is None
    assert drop_reason(ok, good, 1, 1, max_lines=1) == "too_long"
    assert drop_reason(ok, good + "\nmore", 1, 1, max_lines=10) == "no_sentinel"
    assert drop_reason(ok, "!!! ValueError: x\n" + good, 1, 1, max_lines=10) == "runtime_error"
    assert drop_reason(ok, good, 1, 2, max_lines=10) == "label_mismatch"
    assert drop_reason(SandboxResult(Verdict.TIMEOUT), good, None, 1, max_lines=10) == "verdict:timeout"
    assert drop_reason(SandboxResult(Verdict.OK, truncated=True), good, 1, 1, max_lines=10) == "truncated"


def test_records_and_summary(collected: tuple[Path, dict[str, Any]]) -> None:
    output, summary = collected
    records = _records(output)
    assert len(records) == NUM_INPUTS * len(ALGORITHMS) * 2
    assert summary["total"] == len(records) and summary["kept"] == sum(r["kept"] for r in records)
    assert json.loads((output / "summary.json").read_text()) == summary
    for record in records:
        assert record["id"] == f"{record['item_id']}/{record['algorithm']}/{record['direction']}"
        assert record["kept"] == (record["reason"] is None)
        assert record["reason"] is None or record["reason"] in REASONS
    for name in ALGORITHMS:
        for direction in ("encode", "decode"):
            cell = summary["algorithms"][name][direction]
            assert cell["kept"] + cell["dropped"] == NUM_INPUTS


def test_decoder_traces_present_and_kept(collected: tuple[Path, dict[str, Any]]) -> None:
    records = _records(collected[0])
    for name in ("lzw", "rle", "huffman"):
        decoded = [r for r in records if r["algorithm"] == name and r["direction"] == "decode"]
        assert len(decoded) == NUM_INPUTS
        assert any(r["kept"] for r in decoded), name  # long huffman inputs exceed 3,000 lines (too_long)
        assert all(r["reason"] in (None, "too_long") for r in decoded), name


def test_kept_traces_end_with_sentinel_and_labels_are_return_values(
    bench: Path, collected: tuple[Path, dict[str, Any]]
) -> None:
    items = {item["id"]: item for item in json.loads((bench / "rtce.json").read_text())}
    kept = [r for r in _records(collected[0]) if r["kept"]]
    assert {r["algorithm"] for r in kept} == set(ALGORITHMS)
    for record in kept:
        algorithm, x = ALGORITHMS[record["algorithm"]], items[record["item_id"]]["input"]
        lines = record["trace"].splitlines()
        assert lines[0].startswith(">>> Call to main_solution")
        assert lines[-1].startswith(SENTINEL)
        assert not any(line.lstrip().startswith(("!!!", "Traceback")) for line in lines)
        if record["direction"] == "encode":
            assert record["input"] == x
            assert record["label"] == algorithm.to_json(algorithm.encode(x))
        else:
            assert record["label"] == x
            assert lines[-1] == SENTINEL + repr(x)


def test_ae_decoder_not_roundtrip_is_dropped(bench: Path, collected: tuple[Path, dict[str, Any]]) -> None:
    items = {item["id"]: item for item in json.loads((bench / "rtce.json").read_text())}
    decoded = [r for r in _records(collected[0]) if r["algorithm"] == "ae" and r["direction"] == "decode"]
    exact = [r for r in decoded if items[r["item_id"]]["algorithms"]["ae"]["roundtrip_ok"]]
    inexact = [r for r in decoded if not items[r["item_id"]]["algorithms"]["ae"]["roundtrip_ok"]]
    assert exact and inexact  # seed 42: the first (short) input round-trips, the longer ones do not
    assert all(r["kept"] and r["label"] == items[r["item_id"]]["input"] for r in exact)
    for record in inexact:
        assert (record["kept"], record["reason"], record["trace"], record["label"]) == (
            False,
            "not_roundtrip",
            "",
            None,
        )


def test_long_output_shown_in_full() -> None:
    rng = random.Random(7)
    x = "".join(rng.choice("abc") * rng.randint(1, 3) for _ in range(300))[:600]
    rle = ALGORITHMS["rle"]
    z = rle.encode(x)
    tasks = [
        TraceTask("long/rle/encode", "long", "rle", "encode", rle.encoder_source(None), x, x, rle.to_json(z)),
        TraceTask("long/rle/decode", "long", "rle", "decode", rle.decoder_source(None), z, rle.to_json(z), x),
    ]
    assert len(repr(z)) > 1000
    with SandboxPool(workers=2, preload=("json", "snoop"), config=SandboxConfig(max_output_bytes=8 << 20)) as pool:
        encoded, decoded = trace_tasks(tasks, pool, max_lines=100_000)
    assert encoded["kept"] and decoded["kept"], (encoded["reason"], decoded["reason"])
    assert encoded["label"] == rle.to_json(z) and len(json.dumps(encoded["label"])) > 1000
    assert encoded["trace"].splitlines()[-1] == SENTINEL + repr(z)
    assert decoded["label"] == x
    assert decoded["trace"].splitlines()[-1] == SENTINEL + repr(x)
    assert "..." not in encoded["trace"].splitlines()[-1]


@pytest.mark.slow
def test_two_collections_identical(bench: Path, collected: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    summary = collect_traces(bench, tmp_path, workers=2, progress=False)
    assert summary == collected[1]
    assert (tmp_path / TRACES_FILE).read_bytes() == (collected[0] / TRACES_FILE).read_bytes()


def test_resume_after_losing_half(bench: Path, collected: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    reference = (collected[0] / TRACES_FILE).read_bytes()
    lines = reference.decode("utf-8").splitlines(keepends=True)
    kept_half = lines[1::2]
    (tmp_path / TRACES_FILE).write_text("".join(kept_half) + lines[0][: len(lines[0]) // 2], encoding="utf-8")
    summary = collect_traces(bench, tmp_path, workers=2, progress=False)
    assert summary == collected[1]
    assert (tmp_path / TRACES_FILE).read_bytes() == reference


def test_failing_program_is_dropped(bench: Path, tmp_path: Path) -> None:
    rle = ALGORITHMS["rle"]
    broken = dataclasses.replace(rle, decoder_template=rle.decoder_template.replace("result = []", "result = 1 / 0"))
    summary = collect_traces(bench, tmp_path, workers=2, algorithms=["rle"], progress=False, registry={"rle": broken})
    decoded = [r for r in _records(tmp_path) if r["direction"] == "decode"]
    assert len(decoded) == NUM_INPUTS
    assert all(not r["kept"] and r["reason"] in ("runtime_error", "verdict:error") for r in decoded)
    assert summary["algorithms"]["rle"]["decode"]["dropped"] == NUM_INPUTS
    assert summary["algorithms"]["rle"]["encode"]["kept"] > 0


def _kt(*args: str) -> subprocess.CompletedProcess[str]:
    kt = shutil.which("kt") or str(Path(sys.executable).with_name("kt"))
    return subprocess.run([kt, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_cli_collect(bench: Path, tmp_path: Path) -> None:
    done = _kt("traces", "collect", "--benchmark", str(bench), "--output", str(tmp_path), "--workers", "2")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["total"] == NUM_INPUTS * len(ALGORITHMS) * 2
    assert (tmp_path / TRACES_FILE).exists()


def test_cli_missing_benchmark(tmp_path: Path) -> None:
    done = _kt("traces", "collect", "--benchmark", str(tmp_path / "none"), "--output", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1 and "rtce.json" in done.stderr


def _burn_cpu(seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"]
    )


@pytest.mark.slow
def test_two_collections_identical_while_both_cores_are_loaded(
    bench: Path, collected: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    burners = [_burn_cpu(600) for _ in range(3)]  # more busy processes than cores, for the whole collection
    try:
        summary = collect_traces(bench, tmp_path, workers=2, progress=False)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert summary == collected[1]
    assert (tmp_path / TRACES_FILE).read_bytes() == (collected[0] / TRACES_FILE).read_bytes()


@pytest.mark.slow
def test_shards_merge_byte_identical_to_one_collection(
    bench: Path, collected: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    base = ["traces", "collect", "--benchmark", str(bench), "--output", str(tmp_path), "--workers", "2", "--quiet"]
    for index in ("1", "0", "2"):
        done = _kt(*base, "--num-shards", "3", "--shard-index", index)
        assert done.returncode == 0, done.stderr
    assert not (tmp_path / TRACES_FILE).exists() and not (tmp_path / "summary.json").exists()
    merged = _kt(*base)  # without shards: merges the three, traces nothing
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout) == collected[1]
    assert (tmp_path / TRACES_FILE).read_bytes() == (collected[0] / TRACES_FILE).read_bytes()
    assert (tmp_path / "summary.json").read_bytes() == (collected[0] / "summary.json").read_bytes()


def test_a_rerun_with_other_settings_is_refused_unless_overwrite(bench: Path, tmp_path: Path) -> None:
    base = ["traces", "collect", "--benchmark", str(bench), "--output", str(tmp_path), "--algorithm", "rle", "--quiet"]
    assert _kt(*base).returncode == 0
    before = (tmp_path / TRACES_FILE).read_bytes()
    refused = _kt(*base, "--max-lines", "5")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "other settings (max_lines)" in refused.stderr and "--overwrite" in refused.stderr
    assert (tmp_path / TRACES_FILE).read_bytes() == before  # the earlier output is intact
    fresh = _kt(*base, "--max-lines", "5", "--overwrite")
    assert fresh.returncode == 0, fresh.stderr
    assert {r["reason"] for r in _records(tmp_path)} >= {"too_long"}


@pytest.mark.slow
def test_timeouts_are_traced_again_by_reruns(bench: Path, tmp_path: Path) -> None:
    from kt_train.records import count_failures

    rle = ALGORITHMS["rle"]
    looping = dataclasses.replace(
        rle, decoder_template=rle.decoder_template.replace("result = []", "result = []\n    while True: pass")
    )
    config = SandboxConfig(timeout_s=0.5, wall_timeout_s=5.0)

    def collect() -> dict[str, Any]:
        return collect_traces(
            bench, tmp_path, workers=2, algorithms=["rle"], progress=False, registry={"rle": looping}, config=config
        )

    collect()
    decodes = [r["id"] for r in _records(tmp_path) if r["direction"] == "decode"]
    assert all(r["reason"] == "verdict:timeout" for r in _records(tmp_path) if r["direction"] == "decode")
    assert all(count_failures(tmp_path / TRACES_FILE)[d] == 1 for d in decodes)
    collect()
    assert all(count_failures(tmp_path / TRACES_FILE)[d] == 2 for d in decodes)  # traced again, and failed again


@pytest.mark.slow
def test_kill_9_at_random_points_then_resume_gives_the_same_traces(
    bench: Path, timed_collection: tuple[Path, dict[str, Any], float], tmp_path: Path
) -> None:
    import os
    import signal
    import time

    collected, summary, seconds = timed_collection
    kt = shutil.which("kt") or str(Path(sys.executable).with_name("kt"))
    command = [kt, "traces", "collect", "--benchmark", str(bench), "--output", str(tmp_path), "--workers", "2"]
    rng = random.Random(11)
    kills = 0
    while not (tmp_path / "done.json").exists():
        process = subprocess.Popen([*command, "--quiet"], start_new_session=True, stdout=subprocess.DEVNULL)
        # kill windows sized by the in-process collection (the command also starts up): the first run is always
        # killed, on a fast machine or a loaded one (fixed windows of 3-12 s once let a fast run finish first);
        # they widen with each kill, so that resumed runs get to finish
        time.sleep(rng.uniform(0.1, 0.9) * seconds * (1 + kills / 3))
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # the whole group: kt, its sandbox workers, their jobs
            kills += 1
        process.wait(timeout=120)
        assert kills < 20
    assert kills >= 1
    assert (tmp_path / TRACES_FILE).read_bytes() == (collected / TRACES_FILE).read_bytes()
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
