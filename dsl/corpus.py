"""Build a deduplicated program–sequence corpus: blocks of candidates in parallel, then selection and writing.

Resumable: finished blocks are files, so a killed run restarted with the same arguments redoes only missing blocks and
writes the same bytes. Distributable: `num_shards` / `shard_index` make a run build only its share of the blocks;
`merge_corpus` gathers the blocks of several runs and finishes the corpus.
"""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from tqdm.auto import tqdm

from dsl.blocks import BlockSpec, block_path, digest_keys, read_block, write_block
from dsl.dataset_io import CORPUS_SCHEMA, corpus_stats, read_exclusions, read_manifest, remove_dataset, write_dataset
from dsl.sampler import DEFAULT_CONFIG, SamplerConfig
from dsl.selection import Selection, Target, select
from kt_train.stages import differing_keys

BLOCKS_DIR = ".blocks"
PLAN = "plan.json"
EXCLUDE = "exclude.npy"
MEAN_LENGTH_GUESS = 70  # bytes per candidate sequence, to size the first round of blocks in bytes mode
FIRST_ROUND_MARGIN = 1.12  # candidates per wanted pair in the first round (9% are duplicates at 1M pairs)


class CorpusError(RuntimeError):
    """A corpus request that cannot be carried out (the CLI prints it as one line)."""


@dataclass
class CorpusRequest:
    """What to build and where; everything that shapes the output is in `settings()`."""

    output: Path
    seed: int
    target: Target
    stream: str = "train"
    config: SamplerConfig = DEFAULT_CONFIG
    exclude: np.ndarray = field(default_factory=lambda: np.empty((0, 2), np.uint64))
    workers: int = 1
    block_size: int = 0  # 0: chosen from the target
    num_shards: int = 1
    shard_index: int = 0
    keep_blocks: bool = False
    overwrite: bool = False
    command: str = ""
    progress: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.shard_index < self.num_shards:
            raise CorpusError(f"--shard-index must be in [0, {self.num_shards}), got {self.shard_index}")
        if self.workers < 1:
            raise CorpusError(f"--workers must be >= 1, got {self.workers}")
        if not self.block_size:
            wanted = self.target.pairs or (self.target.bytes or 0) // MEAN_LENGTH_GUESS
            self.block_size = int(min(16_384, max(256, wanted // 8)))

    @property
    def spec(self) -> BlockSpec:
        return BlockSpec(self.stream, self.seed, self.block_size, self.config)

    def settings(self) -> dict[str, Any]:
        exclude_bytes = np.ascontiguousarray(np.unique(self.exclude, axis=0)).tobytes() if len(self.exclude) else b""
        return {
            "stream": self.stream,
            "seed": self.seed,
            "target_pairs": self.target.pairs,
            "target_bytes": self.target.bytes,
            "sampler": self.config.to_dict(),
            "block_size": self.block_size,
            "excluded_sequences": len(self.exclude),
            "exclude_sha256": hashlib.sha256(exclude_bytes).hexdigest()[:16],
            "block_key": self.spec.key(),
        }


def _blocks_dir(request: CorpusRequest) -> Path:
    return request.output / BLOCKS_DIR / request.spec.key()


def _build_blocks(request: CorpusRequest, blocks: list[int], total: int) -> None:
    """Make the missing blocks among `blocks`, in parallel when workers > 1."""
    directory = _blocks_dir(request)
    missing = [b for b in blocks if not block_path(directory, b).exists()]
    size = request.block_size
    bar = tqdm(
        total=total * size,
        initial=(total - len(missing)) * size,
        unit="prog",
        unit_scale=True,
        desc="sampling programs",
        disable=not request.progress,
    )
    with bar:
        if request.workers == 1 or len(missing) <= 1:
            for b in missing:
                write_block(request.spec, b, str(directory))
                bar.update(size)
            return
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(request.workers, len(missing)), mp_context=context) as pool:
            futures = [pool.submit(write_block, request.spec, b, str(directory)) for b in missing]
            for future in as_completed(futures):
                future.result()
                bar.update(size)


class Candidates:
    """The first `num_blocks` blocks, memory-mapped; gathers rows block by block (never the whole table at once)."""

    def __init__(self, directory: Path, num_blocks: int, block_size: int) -> None:
        self.blocks = [read_block(directory, b) for b in range(num_blocks)]
        self.block_size = block_size
        self.keys = np.concatenate([digest_keys(t.column("digest").combine_chunks()) for t in self.blocks])
        self.bits = np.concatenate([t.column("bits").to_numpy() for t in self.blocks])
        self.lengths = np.concatenate(
            [pc.list_value_length(t.column("sequence")).to_numpy() for t in self.blocks]
        ).astype(np.int64)

    def __len__(self) -> int:
        return len(self.bits)

    def take(self, indices: np.ndarray, columns: list[str]) -> pa.Table:
        """Rows `indices` (any order) of `columns`, in that order."""
        block_of = indices // self.block_size
        order = np.argsort(block_of, kind="stable")
        bounds = np.flatnonzero(np.diff(block_of[order])) + 1
        parts = [
            self.blocks[int(block_of[chunk[0]])].select(columns).take(pa.array(indices[chunk] % self.block_size))
            for chunk in np.split(order, bounds)
            if len(chunk)
        ]
        gathered = pa.concat_tables(parts).combine_chunks()
        return gathered.take(pa.array(np.argsort(order, kind="stable")))

    def texts(self, indices: np.ndarray) -> list[str]:
        return self.take(indices, ["program"]).column("program").to_pylist()

    def select(self, target: Target, exclude: np.ndarray) -> Selection:
        excluded = None
        if len(exclude):
            as_void = np.ascontiguousarray(self.keys).view("V16").ravel()
            excluded = np.isin(as_void, np.ascontiguousarray(exclude).view("V16").ravel())
        return select(self.keys, self.bits, self.lengths, self.texts, target, excluded)


def _write_plan(request: CorpusRequest) -> None:
    directory = _blocks_dir(request)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / PLAN).write_text(json.dumps(request.settings(), indent=2, sort_keys=True) + "\n")
    np.save(directory / EXCLUDE, request.exclude)


def _first_round_blocks(request: CorpusRequest) -> int:
    wanted = request.target.pairs or (request.target.bytes or 0) / MEAN_LENGTH_GUESS
    return max(1, math.ceil(wanted * FIRST_ROUND_MARGIN / request.block_size))


def generate_corpus(request: CorpusRequest) -> dict[str, Any] | None:
    """Build (or finish) the corpus; return its manifest, or None for a shard-only run."""
    request.output.mkdir(parents=True, exist_ok=True)
    settings = request.settings()
    existing = read_manifest(request.output)
    if existing is not None and existing["settings"] != settings:
        if not request.overwrite:
            keys = ", ".join(differing_keys(existing["settings"], settings))
            raise CorpusError(
                f"{request.output} holds a corpus made with other settings ({keys}); pass --overwrite to start "
                "afresh or use a new --output"
            )
        remove_dataset(request.output)
    elif existing is not None:
        return existing
    _write_plan(request)
    directory = _blocks_dir(request)
    num_blocks = _first_round_blocks(request)
    if request.num_shards > 1:
        mine = [b for b in range(num_blocks) if b % request.num_shards == request.shard_index]
        _build_blocks(request, mine, len(mine))
        return None
    while True:
        _build_blocks(request, list(range(num_blocks)), num_blocks)
        candidates = Candidates(directory, num_blocks, request.block_size)
        selection = candidates.select(request.target, request.exclude)
        if selection.rows is not None:
            break
        if request.target.pairs is not None:
            have, want = selection.distinct, request.target.pairs
        else:
            have, want = selection.distinct_bytes, request.target.bytes or 0
        per_candidate = max(have, 1) / len(candidates)
        num_blocks += max(1, math.ceil((want - have) / per_candidate * 1.1 / request.block_size))
    manifest = _finish(request, candidates, selection, settings)
    if not request.keep_blocks:
        shutil.rmtree(request.output / BLOCKS_DIR, ignore_errors=True)
    return manifest


def _finish(request: CorpusRequest, candidates: Candidates, selection: Selection, settings: dict) -> dict[str, Any]:
    rows = selection.rows
    assert rows is not None
    prefix = "kt-dsl" if request.stream == "train" else f"kt-dsl-{request.stream}"
    columns = ["program", "sequence", "bits", "num_lines"]

    def shard(start: int, stop: int) -> pa.Table:
        chosen = candidates.take(rows[start:stop], columns)
        ids = pc.binary_join_element_wise(
            f"{prefix}-{request.seed}-", pa.array(rows[start:stop]).cast(pa.string()), ""
        )
        length = pc.list_value_length(chosen.column("sequence")).cast(pa.int32())
        return pa.Table.from_arrays([ids, *chosen.columns, length], schema=CORPUS_SCHEMA)

    masks = candidates.take(rows, ["functions"]).column("functions").to_numpy()
    manifest = {
        "settings": settings,
        "command": request.command,
        "candidates": selection.candidates,
        "duplicates": selection.candidates - selection.excluded - len(rows),
        "excluded": selection.excluded,
        "stats": corpus_stats(
            candidates.lengths[rows],
            candidates.take(rows, ["num_lines"]).column("num_lines").to_numpy(),
            candidates.bits[rows],
            masks,
        ),
    }
    name = "KT DSL evaluation set" if request.stream == "eval" else "KT DSL training pairs"
    write_dataset(request.output, len(rows), shard, manifest, name, threads=min(request.workers, 4))
    return manifest


def merge_corpus(output: Path, sources: list[Path], workers: int = 1, progress: bool = True) -> dict[str, Any]:
    """Gather the blocks that shard runs left in `sources` into `output`, then finish the corpus there."""
    plans: dict[str, Path] = {}
    for source in sources:
        for plan in sorted((source / BLOCKS_DIR).glob(f"*/{PLAN}")):
            plans.setdefault(plan.read_text(), plan.parent)
    if len(plans) != 1:
        found = "no shard blocks" if not plans else "blocks of different corpora"
        raise CorpusError(f"merge: found {found} under {', '.join(map(str, sources))}")
    plan_text, first = next(iter(plans.items()))
    plan = json.loads(plan_text)
    target = Target(pairs=plan["target_pairs"], bytes=plan["target_bytes"])
    request = CorpusRequest(
        output=output,
        seed=plan["seed"],
        target=target,
        stream=plan["stream"],
        config=SamplerConfig(**plan["sampler"]),
        exclude=np.load(first / EXCLUDE),
        workers=workers,
        block_size=plan["block_size"],
        command=f"kt dsl merge --output {output} {' '.join(map(str, sources))}",
        progress=progress,
    )
    destination = _blocks_dir(request)
    destination.mkdir(parents=True, exist_ok=True)
    for source in sources:
        source_dir = source / BLOCKS_DIR / plan["block_key"]
        if source_dir.resolve() == destination.resolve():
            continue
        for block in sorted(source_dir.glob("block-*.arrow")):
            if not (destination / block.name).exists():
                shutil.copyfile(block, destination / block.name)
    manifest = generate_corpus(request)
    assert manifest is not None
    return manifest


def corpus_command(base: str, exclude: list[Path] | list[str], sampler_config: str | None = None) -> str:
    """The `kt dsl generate` / `eval-set` command (`base`) with its exclusions and sampler config, as the corpus's
    README and manifest record it."""
    command = base + "".join(f" --exclude {path}" for path in exclude)
    return command + (f" --sampler-config {sampler_config}" if sampler_config else "")


def build_eval_set(
    output: Path, size_bytes: int, seed: int, exclude: list[Path], workers: int = 1, progress: bool = False
) -> dict[str, Any]:
    """`kt dsl eval-set` as a call (a recipe's evaluation builds its held-out set with it): at least `size_bytes` of
    sequences of the seed's evaluation stream, none of `exclude`'s; its manifest."""
    request = CorpusRequest(
        output=output,
        seed=seed,
        target=Target(bytes=size_bytes),
        stream="eval",
        exclude=read_exclusions(exclude),
        workers=workers,
        command=corpus_command(f"kt dsl eval-set --bytes {size_bytes} --seed {seed} --output OUT", exclude),
        progress=progress,
    )
    manifest = generate_corpus(request)
    assert manifest is not None  # one shard: the whole set
    return manifest
