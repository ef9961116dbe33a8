"""Candidate blocks: the unit of work of the corpus generator.

Candidate i of a stream is the program sampled from its own RNG, seeded by hashing (stream, seed, i), so any candidate
can be rebuilt alone and a block's content depends only on (stream, seed, config, block index, block size). A block is
written to an Arrow IPC file under a temporary name and renamed when complete: a file that exists is a finished block.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from dsl.bits import program_bits
from dsl.functions import FUNCTION_NAMES
from dsl.interpreter import run_lines
from dsl.program import Program, render_program
from dsl.sampler import SamplerConfig, sample_program

FORMAT_VERSION = 1  # bump when candidates or their encoding change: cached blocks of other versions are not reused

BLOCK_SCHEMA = pa.schema(
    [
        ("program", pa.string()),
        ("sequence", pa.list_(pa.uint8())),
        ("bits", pa.float64()),
        ("num_lines", pa.int32()),
        ("digest", pa.binary(16)),  # blake2b-128 of the sequence bytes: the deduplication key
        ("functions", pa.uint32()),  # bit k set: the program uses FUNCTION_NAMES[k]
    ]
)


FUNCTION_BITS = {name: 1 << k for k, name in enumerate(FUNCTION_NAMES)}


def function_mask(program: Program) -> int:
    """Bit mask of the functions (predicates included) a program uses."""
    mask = 0
    for line in program.lines:
        mask |= FUNCTION_BITS[line.func]
        if line.func == "filter":
            mask |= FUNCTION_BITS[line.args[0]]  # type: ignore[index]
    return mask


def item_seed(stream: str, seed: int, index: int) -> int:
    """Seed of candidate `index`: a hash of (stream, seed, index), so seeds and streams never overlap."""
    return int.from_bytes(hashlib.blake2b(f"{stream}:{seed}:{index}".encode(), digest_size=8).digest(), "little")


def sequence_digest(values: bytes) -> bytes:
    return hashlib.blake2b(values, digest_size=16).digest()


def digest_keys(digests: pa.FixedSizeBinaryArray) -> np.ndarray:
    """(n, 2) uint64 view of an array of 16-byte digests."""
    raw = np.frombuffer(digests.buffers()[1], dtype=np.uint8, count=16 * len(digests), offset=16 * digests.offset)
    return raw.view(np.uint64).reshape(-1, 2)


@dataclass(frozen=True)
class BlockSpec:
    """Everything that determines a block's content, plus where it lives."""

    stream: str
    seed: int
    block_size: int
    config: SamplerConfig

    def key(self) -> str:
        """Identifies the candidate stream: blocks cached under another key are never mixed in."""
        payload = {"v": FORMAT_VERSION, "stream": self.stream, "seed": self.seed, "block_size": self.block_size}
        payload["config"] = self.config.to_dict()
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def block_path(directory: Path, block: int) -> Path:
    return directory / f"block-{block:06d}.arrow"


def build_block(spec: BlockSpec, block: int) -> pa.Table:
    """Sample, validate (re-run by the interpreter), render, encode and hash the candidates of one block."""
    programs: list[str] = []
    flat = bytearray()
    offsets = [0]
    bits: list[float] = []
    num_lines: list[int] = []
    digests: list[bytes] = []
    masks: list[int] = []
    rng = random.Random()
    start = block * spec.block_size
    for index in range(start, start + spec.block_size):
        rng.seed(item_seed(spec.stream, spec.seed, index))
        program, values = sample_program(rng, spec.config)
        if run_lines(program)[-1] != values:  # validate: the interpreter re-runs the recorded program
            raise RuntimeError(f"candidate {index}: the program does not produce its sequence")
        data = bytes(values)  # raises if a value left 0..255: the sampler guarantees it does not
        programs.append(render_program(program))
        flat += data
        offsets.append(len(flat))
        bits.append(program_bits(program))
        num_lines.append(len(program.lines) + 1)
        digests.append(sequence_digest(data))
        masks.append(function_mask(program))
    values_array = pa.Array.from_buffers(pa.uint8(), len(flat), [None, pa.py_buffer(bytes(flat))])
    sequences = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values_array)
    return pa.Table.from_arrays(
        [
            pa.array(programs, pa.string()),
            sequences,
            pa.array(bits, pa.float64()),
            pa.array(num_lines, pa.int32()),
            pa.array(digests, pa.binary(16)),
            pa.array(masks, pa.uint32()),
        ],
        schema=BLOCK_SCHEMA,
    )


def write_block(spec: BlockSpec, block: int, directory: str) -> int:
    """Build block `block` into `directory` unless it is already there; return its index. Runs in worker processes."""
    path = block_path(Path(directory), block)
    if not path.exists():
        table = build_block(spec, block)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with pa.OSFile(str(tmp), "wb") as sink, ipc.new_file(sink, BLOCK_SCHEMA) as writer:
            writer.write_table(table)
        os.replace(tmp, path)
    return block


def read_block(directory: Path, block: int) -> pa.Table:
    with pa.memory_map(str(block_path(directory, block))) as source:
        return ipc.open_file(source).read_all()
