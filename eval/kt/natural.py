"""Natural KT evaluation data (paper 003, §3.2, §A.1): text, DNA and audio files cut into sequences of symbols.

Every source file is an *origin*. Its symbol stream is cut into consecutive, non-overlapping sequences of
`sequence_length` symbols; the last, shorter sequence of an origin is kept (nothing is merged across origins). Files
are taken in order (or in a seeded shuffled order) until the data reaches `max_bytes` bytes, counted as
`symbols * symbol_bits / 8`, so 1 MB of DNA (3 bits a symbol) is 2,666,667 symbols, as in the paper; a sequence is
never cut to hit the budget exactly. Large text and FASTA files are read in bounded blocks, only as far as needed
(`.gz` files are decompressed on the fly).

Symbols per modality:
  text     the file's raw bytes (enwik9 is UTF-8), 0..255.
  dna      FASTA without headers and line breaks; A,C,T,G -> 0,1,2,3 and a,c,t,g -> 4,5,6,7 (see DNA_SYMBOLS);
           any other character (N, IUPAC codes) is dropped and counted.
  audio16  int16 samples of the first channel, each as two bytes, little-endian (low byte first).
  audio8   the high byte of each int16 sample as a signed 8-bit value, two's complement (see audio8_symbols).
  mfcc     20 MFCCs (librosa defaults) of the mono mix, rounded, mod 256, coefficient-major (see mfcc_symbols).

Output: `DIR/data/train-00000-of-00001.parquet` (id, sequence, length, source, offset), its card `DIR/README.md` and
the manifest `DIR/kt_data.json`, written to a temporary sibling folder that is renamed into place at the end.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from kt_train.hf_dataset import CardInfo, SplitSize, write_card

MODALITIES = ("text", "dna", "audio16", "audio8", "mfcc")
AUDIO_MODALITIES = ("audio16", "audio8", "mfcc")
DATA_FILE = "data/train-00000-of-00001.parquet"
MANIFEST = "kt_data.json"
BLOCK_BYTES = 1 << 20  # text and FASTA are read this much at a time
ROWS_PER_GROUP = 8192
N_MFCC = 20

DNA_SUFFIXES = (".fa", ".fasta", ".fna", ".fas")
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".aif", ".aiff", ".au", ".caf", ".w64", ".rf64")

# The official DNA file (1 MB of GRCh38) gives this order. Its values 0-3 and 4-7 form two groups that rarely follow
# each other (the two cases: soft-masked repeats are runs of lower case). It starts with the telomere repeat in the
# 4-7 group, 6,4,4,5,5,5 repeated, i.e. "taaccc": a=4, c=5, t=6, so g=7. Within 0-3, bigram counts are symmetric
# under reverse complement only with 0<->2 and 1<->3 as complements (AA~TT, AC~GT, AG~CT, CC~GG, CA~TG); the one
# strongly depleted bigram is 1,3 (CpG, 65k vs 148k for 3,1), so C=1, G=3; and 2,0 (TpA, 45k vs 65k for 0,2) is the
# second most depleted, so T=2, A=0: the same A,C,T,G order as the lower-case group.
DNA_SYMBOLS = "ACTGactg"
_DNA_SKIP, _DNA_DROP = 255, 254
_DNA_TABLE = np.full(256, _DNA_DROP, dtype=np.uint8)
_DNA_TABLE[list(b" \t\r\n\v\f")] = _DNA_SKIP  # line breaks and blanks are layout, not dropped symbols
_DNA_TABLE[list(DNA_SYMBOLS.encode())] = np.arange(len(DNA_SYMBOLS), dtype=np.uint8)

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("sequence", pa.list_(pa.uint8())),
        ("length", pa.int32()),
        ("source", pa.string()),
        ("offset", pa.int64()),
    ]
)


class NaturalDataError(ValueError):
    """A user error in the inputs or output of a natural dataset (the CLI prints it as one line)."""


def symbol_bits(modality: str) -> int:
    """Bits one symbol stands for in CompressionRate's raw size: 3 for DNA (8 values), 8 otherwise."""
    return 3 if modality == "dna" else 8


@dataclass
class NaturalDataConfig:
    modality: str = field(metadata={"help": "Data modality.", "choices": MODALITIES})
    inputs: Sequence[Path] = field(metadata={"help": "Files or directories (their files of the modality, by name)."})
    output: Path = field(metadata={"help": "Dataset directory to write."})
    sequence_length: int = field(default=128, metadata={"help": "Symbols per sequence (the paper uses 128)."})
    max_bytes: int = field(
        default=1_000_000, metadata={"help": "Stop once symbols * symbol_bits / 8 reaches this (the paper: 1 MB)."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of the file order with shuffle."})
    shuffle: bool = field(default=False, metadata={"help": "Take the files in a seeded random order."})
    overwrite: bool = field(default=False, metadata={"help": "Replace an existing non-empty output directory."})

    def __post_init__(self) -> None:
        if self.modality not in MODALITIES:
            raise ValueError(f"modality must be one of {', '.join(MODALITIES)}, got {self.modality!r}")
        if not self.inputs:
            raise ValueError("inputs: give at least one file or directory")
        if self.sequence_length < 1:
            raise ValueError(f"sequence_length must be at least 1, got {self.sequence_length}")
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, got {self.max_bytes}")
        self.inputs = [Path(p) for p in self.inputs]
        self.output = Path(self.output)


# --- symbols of one file ------------------------------------------------------------------------------------------


def _open(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _text_blocks(path: Path) -> Iterator[np.ndarray]:
    with _open(path) as handle:
        while block := handle.read(BLOCK_BYTES):
            yield np.frombuffer(block, dtype=np.uint8)


def _dna_blocks(path: Path, counts: Counter) -> Iterator[np.ndarray]:
    """FASTA symbols block by block; header lines ('>' at a line start) may span blocks."""
    in_header, line_start = False, True
    with _open(path) as handle:
        while block := handle.read(BLOCK_BYTES):
            parts = block.split(b"\n")
            kept = []
            for index, part in enumerate(parts):
                if index > 0 or line_start:
                    in_header = part.startswith(b">")
                if not in_header:
                    kept.append(part)
            line_start = parts[-1] == b""
            values = _DNA_TABLE[np.frombuffer(b"".join(kept), dtype=np.uint8)]
            counts["dropped_symbols"] += int(np.count_nonzero(values == _DNA_DROP))
            yield values[values < len(DNA_SYMBOLS)]


def _pcm16(path: Path) -> np.ndarray:
    """The int16 samples of the first channel (other channels are ignored; LibriSpeech is mono)."""
    import soundfile

    try:
        samples, _ = soundfile.read(path, dtype="int16", always_2d=True)
    except (soundfile.SoundFileError, RuntimeError, TypeError) as exc:
        raise NaturalDataError(f"{path}: not a readable audio file ({exc})") from exc
    return samples[:, 0]


def audio16_symbols(samples: np.ndarray) -> np.ndarray:
    """Each int16 sample as two bytes, low byte first."""
    return np.ascontiguousarray(samples, dtype="<i2").view(np.uint8)


def audio8_symbols(samples: np.ndarray) -> np.ndarray:
    """The high byte of each int16 sample as signed 8-bit PCM in two's complement: (s >> 8) mod 256.

    This is the official release's convention, not unsigned 8-bit PCM ((s >> 8) + 128): its 8-bit and 16-bit files
    share whole recordings (e.g. 8-bit bytes 420240..486880 equal 16-bit samples 296560..363200 under this map, and
    its first 290,240 bytes equal the first 290,240 samples), and silence there is 0 and 255, not 128 and 127. An
    unsigned 8-bit WAV u therefore gives u - 128 mod 256.
    """
    return (np.asarray(samples, dtype=np.int16) >> 8).astype(np.int8).view(np.uint8)


def mfcc_symbols(path: Path) -> np.ndarray:
    """librosa's 20 MFCCs of the mono mix at the file's own rate, rounded, mod 256, coefficient-major.

    Coefficient-major (row-major over librosa's (n_mfcc, frames) matrix: all frames of c0, then of c1, ...) is the
    order of the official MFCC file: its autocorrelation (bytes as signed) is 0.61 at lag 1 and 0.12 at lags 19, 20
    and 21 alike, while frame-major data would peak at lag 20 (the same coefficient a frame later) and have little
    correlation at lag 1 (neighbouring coefficients).
    """
    import soundfile

    try:
        soundfile.info(path)  # a clear error for non-audio, before librosa falls back to audioread
    except (soundfile.SoundFileError, RuntimeError, TypeError) as exc:
        raise NaturalDataError(f"{path}: not a readable audio file ({exc})") from exc
    import librosa

    signal, rate = librosa.load(path, sr=None, mono=True)
    if signal.size == 0:
        return np.empty(0, dtype=np.uint8)
    coefficients = librosa.feature.mfcc(y=signal, sr=rate, n_mfcc=N_MFCC)
    return np.mod(np.rint(coefficients).astype(np.int64), 256).astype(np.uint8).reshape(-1)


def _symbol_blocks(modality: str, path: Path, counts: Counter) -> Iterator[np.ndarray]:
    if modality == "text":
        yield from _text_blocks(path)
    elif modality == "dna":
        yield from _dna_blocks(path, counts)
    elif modality == "audio16":
        yield audio16_symbols(_pcm16(path))
    elif modality == "audio8":
        yield audio8_symbols(_pcm16(path))
    elif modality == "mfcc":
        yield mfcc_symbols(path)
    else:
        raise NaturalDataError(f"unknown modality {modality!r} (one of {', '.join(MODALITIES)})")


def symbols_from_file(modality: str, path: Path) -> np.ndarray:
    """All symbols of one file (uint8). Reads the whole file: for a multi-GB text, use build_natural_dataset."""
    blocks = list(_symbol_blocks(modality, Path(path), Counter()))
    return np.concatenate(blocks) if blocks else np.empty(0, dtype=np.uint8)


# --- inputs -------------------------------------------------------------------------------------------------------


def _matches(modality: str, path: Path) -> bool:
    name = path.name.lower().removesuffix(".gz")
    if modality == "dna":
        return name.endswith(DNA_SUFFIXES)
    if modality in AUDIO_MODALITIES:
        return path.name.lower().endswith(AUDIO_SUFFIXES)
    return True  # text: every file (enwik9 has no suffix)


def resolve_inputs(
    modality: str, inputs: Sequence[Path], seed: int = 0, shuffle: bool = False
) -> list[tuple[Path, str]]:
    """(path, source name) of every origin in reading order. A directory gives its files of the modality, searched
    recursively, hidden ones skipped, sorted by relative path; a file is taken whatever its suffix."""
    found: list[tuple[Path, str]] = []
    for given in map(Path, inputs):
        if given.is_file():
            found.append((given, given.name))
        elif given.is_dir():
            files = sorted(
                (p.relative_to(given).as_posix(), p)
                for p in given.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(given).parts)
            )
            matching = [(p, name) for name, p in files if _matches(modality, p)]
            if not matching:
                raise NaturalDataError(f"{given}: no {modality} files in this directory")
            found.extend(matching)
        else:
            raise NaturalDataError(f"{given}: no such file or directory")
    if shuffle:
        digest = hashlib.sha256(f"kt-data:{modality}:{seed}".encode()).digest()
        random.Random(int.from_bytes(digest[:8], "big")).shuffle(found)
    return found


# --- chunking and writing -----------------------------------------------------------------------------------------


def chunk_blocks(blocks: Iterable[np.ndarray], length: int) -> Iterator[tuple[int, np.ndarray]]:
    """(offset, sequence) over one origin's symbol blocks: consecutive, non-overlapping, the last shorter one kept."""
    pending, offset = np.empty(0, dtype=np.uint8), 0
    for block in blocks:
        pending = np.concatenate([pending, block]) if len(pending) else block
        whole = len(pending) // length * length
        for start in range(0, whole, length):
            yield offset, pending[start : start + length]
            offset += length
        pending = pending[whole:]
    if len(pending):
        yield offset, pending


class _ShardWriter:
    """Rows buffered and written to one Parquet file a row group at a time."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True)
        self.writer = pq.ParquetWriter(path, SCHEMA)
        self.rows: list[tuple[str, np.ndarray, str, int]] = []
        self.num_rows = self.num_bytes = 0

    def add(self, row_id: str, sequence: np.ndarray, source: str, offset: int) -> None:
        self.rows.append((row_id, sequence, source, offset))
        if len(self.rows) >= ROWS_PER_GROUP:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        ids, sequences, sources, offsets = zip(*self.rows)
        lengths = np.array([len(s) for s in sequences], dtype=np.int32)
        ends = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int32)
        values = pa.array(np.concatenate(sequences), type=pa.uint8())
        columns = [
            pa.array(ids, pa.string()),
            pa.ListArray.from_arrays(pa.array(ends, pa.int32()), values),
            pa.array(lengths, pa.int32()),
            pa.array(sources, pa.string()),
            pa.array(offsets, pa.int64()),
        ]
        table = pa.Table.from_arrays(columns, schema=SCHEMA)
        self.writer.write_table(table)
        self.num_rows, self.num_bytes = self.num_rows + table.num_rows, self.num_bytes + table.nbytes
        self.rows = []

    def close(self) -> None:
        self.flush()
        self.writer.close()


def _check_output(output: Path, overwrite: bool) -> None:
    if output.exists() and not output.is_dir():
        raise NaturalDataError(f"{output}: exists and is not a directory")
    if output.is_dir() and any(output.iterdir()) and not overwrite:
        raise NaturalDataError(f"{output}: exists and is not empty (pass --overwrite to replace it)")


def _command(config: NaturalDataConfig) -> str:
    inputs = " ".join(str(p) for p in config.inputs)
    return (
        f"kt kt-data --modality {config.modality} --input {inputs} --output {config.output} "
        f"--sequence-length {config.sequence_length} --max-bytes {config.max_bytes} --seed {config.seed}"
        + (" --shuffle" if config.shuffle else "")
    )


def _card_info(config: NaturalDataConfig, sources: list[dict[str, Any]]) -> CardInfo:
    files = "\n".join(f"- `{s['source']}`: {s['sequences']} sequences, {s['symbols']} symbols" for s in sources)
    description = f"""A natural-data KT evaluation set (paper 003, §3.2, §A.1) made by `kt kt-data`: {config.modality}
cut into sequences of {config.sequence_length} symbols of {symbol_bits(config.modality)} bits. Columns: `id`,
`sequence` (symbols), `length`, `source` (the file), `offset` (the first symbol's position in it). Score it with
`kt eval kt --dataset DIR`. The data keeps its sources' license.

Sources, in the order read:

{files}
"""
    return CardInfo(
        pretty_name=f"KT natural data: {config.modality}",
        description=description,
        command=_command(config),
        license="other",
        language=("en",) if config.modality == "text" else (),
        task_categories=("text-generation",),
        tags=("kolmogorov-test", "compression", config.modality),
    )


def _write(config: NaturalDataConfig, origins: list[tuple[Path, str]], folder: Path, progress: bool) -> dict:
    bits, budget = symbol_bits(config.modality), config.max_bytes * 8
    total, index, sources, dropped = 0, 0, [], 0
    writer = _ShardWriter(folder / DATA_FILE)
    try:
        for path, name in tqdm(origins, desc=f"kt-data {config.modality}", unit="file", disable=not progress):
            counts: Counter = Counter()
            symbols = sequences = 0
            with closing(_symbol_blocks(config.modality, path, counts)) as blocks:
                for offset, sequence in chunk_blocks(blocks, config.sequence_length):
                    writer.add(f"{config.modality}-{index:06d}", sequence, name, offset)
                    index, sequences, symbols = index + 1, sequences + 1, symbols + len(sequence)
                    if (total + symbols) * bits >= budget:
                        break
            if not sequences:
                kind = "A/C/G/T symbols" if config.modality == "dna" else "symbols"
                raise NaturalDataError(f"{path}: empty input (no {kind})")
            total, dropped = total + symbols, dropped + counts["dropped_symbols"]
            source = {"source": name, "sequences": sequences, "symbols": symbols}
            if config.modality == "dna":
                source["dropped_symbols"] = counts["dropped_symbols"]
            sources.append(source)
            if total * bits >= budget:
                break
    finally:
        writer.close()
    write_card(folder, SCHEMA, {"train": SplitSize(writer.num_rows, writer.num_bytes)}, _card_info(config, sources))
    return {
        "modality": config.modality,
        "symbol_bits": bits,
        "sequence_length": config.sequence_length,
        "max_bytes": config.max_bytes,
        "num_sequences": index,
        "total_symbols": total,
        "sources": sources,
        "dropped_symbols": dropped,  # DNA: non-ACGT characters in the part of each file read; 0 otherwise
        "seed": config.seed,
        "shuffle": config.shuffle,
        "command": _command(config),
    }


def build_natural_dataset(
    modality: str,
    inputs: Sequence[Path],
    output: Path,
    sequence_length: int = 128,
    max_bytes: int = 1_000_000,
    seed: int = 0,
    shuffle: bool = False,
    overwrite: bool = False,
    *,
    progress: bool = True,
) -> dict[str, Any]:
    """Write a natural KT dataset to `output` (see the module docstring) and return its manifest."""
    config = NaturalDataConfig(modality, inputs, output, sequence_length, max_bytes, seed, shuffle, overwrite)
    output = config.output
    _check_output(output, overwrite)
    origins = resolve_inputs(modality, config.inputs, seed, shuffle)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = output.with_name(f".{output.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        manifest = _write(config, origins, staging, progress)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        if output.exists():
            retired = output.with_name(f".{output.name}.old-{os.getpid()}")
            output.rename(retired)
            staging.rename(output)
            shutil.rmtree(retired)
        else:
            staging.rename(output)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest
