"""Natural KT data: symbols of each modality, chunking, the stop rule, the dataset on disk and `kt kt-data`."""

from __future__ import annotations

import json
import random
import wave
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from eval.kt import natural
from eval.kt.natural import (
    DATA_FILE,
    MANIFEST,
    NaturalDataError,
    build_natural_dataset,
    chunk_blocks,
    resolve_inputs,
    symbols_from_file,
)
from kt_train.cli import main

SAMPLES = [0, 1, -1, 255, 256, -256, 12345, -12345, 32767, -32768]


def write_wav(path: Path, frames: np.ndarray, width: int = 2, rate: int = 16000) -> Path:
    """frames: (n,) or (n, channels) of int16 (width 2) or uint8 (width 1) samples."""
    frames = frames.reshape(len(frames), -1)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(frames.shape[1])
        out.setsampwidth(width)
        out.setframerate(rate)
        out.writeframes(frames.astype("<i2" if width == 2 else np.uint8).tobytes())
    return path


def rows(output: Path) -> list[dict]:
    return pq.read_table(output / DATA_FILE).to_pylist()


def manifest(output: Path) -> dict:
    return json.loads((output / MANIFEST).read_text())


# --- text ---------------------------------------------------------------------------------------------------------


def test_text_symbols_are_the_utf8_bytes(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("aé€😀\n", encoding="utf-8")
    symbols = symbols_from_file("text", path)
    assert symbols.dtype == np.uint8
    assert symbols.tolist() == [97, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 10]


@pytest.fixture
def two_texts(tmp_path: Path) -> Path:
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "b.txt").write_bytes(bytes(range(100, 106)))  # 6 symbols
    (folder / "a.txt").write_bytes(bytes(range(10)))  # 10 symbols, first by name
    return folder


def test_text_chunks_per_origin_keep_the_short_last_one(two_texts: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = build_natural_dataset("text", [two_texts], out, sequence_length=4, max_bytes=100, progress=False)
    got = [(r["id"], r["source"], r["offset"], r["length"], r["sequence"]) for r in rows(out)]
    assert got == [
        ("text-000000", "a.txt", 0, 4, [0, 1, 2, 3]),
        ("text-000001", "a.txt", 4, 4, [4, 5, 6, 7]),
        ("text-000002", "a.txt", 8, 2, [8, 9]),
        ("text-000003", "b.txt", 0, 4, [100, 101, 102, 103]),
        ("text-000004", "b.txt", 4, 2, [104, 105]),
    ]
    assert result == manifest(out)
    assert result["num_sequences"] == 5 and result["total_symbols"] == 16 and result["symbol_bits"] == 8
    assert result["sources"] == [
        {"source": "a.txt", "sequences": 3, "symbols": 10},
        {"source": "b.txt", "sequences": 2, "symbols": 6},
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "texts"]  # no staging folder left


@pytest.mark.parametrize(
    ("max_bytes", "lengths"),
    [(1, [4]), (8, [4, 4]), (9, [4, 4, 2]), (10, [4, 4, 2]), (11, [4, 4, 2, 4]), (16, [4, 4, 2, 4, 2])],
)
def test_stop_as_soon_as_the_budget_is_reached(two_texts: Path, tmp_path: Path, max_bytes: int, lengths) -> None:
    out = tmp_path / "out"
    result = build_natural_dataset("text", [two_texts], out, sequence_length=4, max_bytes=max_bytes, progress=False)
    assert [r["length"] for r in rows(out)] == lengths
    assert result["total_symbols"] == sum(lengths)


def test_chunks_run_across_read_blocks() -> None:
    blocks = [np.arange(5, dtype=np.uint8), np.arange(5, 7, dtype=np.uint8), np.arange(7, 14, dtype=np.uint8)]
    got = [(offset, seq.tolist()) for offset, seq in chunk_blocks(blocks, 4)]
    assert got == [(0, [0, 1, 2, 3]), (4, [4, 5, 6, 7]), (8, [8, 9, 10, 11]), (12, [12, 13])]


def test_big_text_is_read_in_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big"
    path.write_bytes(bytes(range(256)) * 40)
    monkeypatch.setattr(natural, "BLOCK_BYTES", 100)
    out = tmp_path / "out"
    build_natural_dataset("text", [path], out, sequence_length=64, max_bytes=300, progress=False)
    assert [r["offset"] for r in rows(out)] == [0, 64, 128, 192, 256]
    assert [b for r in rows(out) for b in r["sequence"]] == list(bytes(range(256)) * 2)[:320]


# --- DNA ----------------------------------------------------------------------------------------------------------

FASTA = ">chr1 test: acgt in a header\nACGTNacgtn\r\nRYac\n\n>chr2\nTTgg\n"
FASTA_SYMBOLS = [0, 1, 3, 2, 4, 5, 7, 6, 4, 5, 2, 2, 7, 7]  # A C G T a c g t a c T T g g (order ACTGactg)


def test_dna_fasta_symbols_and_dropped(tmp_path: Path) -> None:
    path = tmp_path / "g.fa"
    path.write_text(FASTA)
    assert symbols_from_file("dna", path).tolist() == FASTA_SYMBOLS
    out = tmp_path / "out"
    result = build_natural_dataset("dna", [path], out, sequence_length=128, progress=False)
    assert [r["sequence"] for r in rows(out)] == [FASTA_SYMBOLS]
    assert result["symbol_bits"] == 3 and result["dropped_symbols"] == 4  # N, n, R, Y
    assert result["sources"] == [{"source": "g.fa", "sequences": 1, "symbols": 14, "dropped_symbols": 4}]


def test_dna_headers_across_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "g.fasta"
    path.write_text(FASTA * 3)
    whole = symbols_from_file("dna", path).tolist()
    for size in (1, 2, 3, 5, 7):
        monkeypatch.setattr(natural, "BLOCK_BYTES", size)
        assert symbols_from_file("dna", path).tolist() == whole == FASTA_SYMBOLS * 3


def test_dna_budget_counts_three_bits_a_symbol(tmp_path: Path) -> None:
    path = tmp_path / "g.fa"
    path.write_text(">x\n" + "ACGT" * 10 + "\n")
    out = tmp_path / "out"
    result = build_natural_dataset("dna", [path], out, sequence_length=4, max_bytes=3, progress=False)
    assert result["total_symbols"] == 8  # 8 symbols * 3 bits = 3 bytes
    result = build_natural_dataset("dna", [path], out, sequence_length=4, max_bytes=4, overwrite=True, progress=False)
    assert result["total_symbols"] == 12  # 11 symbols would do; whole sequences only


# --- audio --------------------------------------------------------------------------------------------------------


def test_audio16_little_endian_bytes(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "a.wav", np.array(SAMPLES))
    expected = [b for s in SAMPLES for b in (s & 0xFF, (s >> 8) & 0xFF)]
    assert symbols_from_file("audio16", path).tolist() == expected
    assert expected[-4:] == [0xFF, 0x7F, 0x00, 0x80]


def test_audio8_high_byte_twos_complement(tmp_path: Path) -> None:
    path = write_wav(tmp_path / "a.wav", np.array(SAMPLES))
    assert symbols_from_file("audio8", path).tolist() == [0, 0, 255, 0, 1, 255, 48, 207, 127, 128]


def test_stereo_uses_the_first_channel(tmp_path: Path) -> None:
    left = np.array(SAMPLES)
    path = write_wav(tmp_path / "s.wav", np.stack([left, -left - 1], axis=1))
    mono = write_wav(tmp_path / "m.wav", left)
    for modality in ("audio16", "audio8"):
        assert symbols_from_file(modality, path).tolist() == symbols_from_file(modality, mono).tolist()


def test_8bit_wav_source(tmp_path: Path) -> None:
    unsigned = np.array([0, 1, 127, 128, 129, 255])
    path = write_wav(tmp_path / "u8.wav", unsigned, width=1)
    signed = (unsigned - 128) & 0xFF  # unsigned 8-bit PCM u is the sample (u - 128) << 8
    assert symbols_from_file("audio8", path).tolist() == signed.tolist()
    assert symbols_from_file("audio16", path).tolist() == [b for s in signed for b in (0, s)]


@pytest.fixture(scope="module")
def tone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rate = 8000
    t = np.arange(rate // 2) / rate
    samples = np.rint(8000 * np.sin(2 * np.pi * 440 * t) * np.linspace(0, 1, len(t)))
    return write_wav(tmp_path_factory.mktemp("tone") / "tone.wav", samples.astype(np.int16), rate=rate)


@pytest.mark.slow
def test_mfcc_coefficient_major(tone: Path, tmp_path: Path) -> None:
    import librosa

    signal, rate = librosa.load(tone, sr=None, mono=True)
    coefficients = librosa.feature.mfcc(y=signal, sr=rate, n_mfcc=20)
    expected = np.mod(np.rint(coefficients).astype(np.int64), 256).reshape(-1)
    out = tmp_path / "out"
    result = build_natural_dataset("mfcc", [tone], out, sequence_length=128, progress=False)
    got = [b for r in rows(out) for b in r["sequence"]]
    assert rate == 8000 and coefficients.shape[0] == 20
    assert got == expected.tolist() and len(got) == 20 * coefficients.shape[1]
    assert result["total_symbols"] == len(got) and all(0 <= b <= 255 for b in got)


# --- inputs and output --------------------------------------------------------------------------------------------


def test_directory_selects_the_modality_and_shuffles_with_its_own_rng(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    for name in ("c.fa", "a.fasta", "sub/b.fna", "notes.txt", ".hidden.fa"):
        (folder / name).write_text(">x\nA\n")
    assert [name for _, name in resolve_inputs("dna", [folder])] == ["a.fasta", "c.fa", "sub/b.fna"]
    for index in range(6):
        (folder / f"{index}.fa").write_text(">x\nA\n")
    random.seed(7)
    state = random.getstate()
    first = resolve_inputs("dna", [folder], seed=0, shuffle=True)
    assert random.getstate() == state
    assert first == resolve_inputs("dna", [folder], seed=0, shuffle=True)
    assert first != resolve_inputs("dna", [folder], seed=1, shuffle=True)
    assert sorted(first) == sorted(resolve_inputs("dna", [folder]))


def test_overwrite_replaces_the_dataset(two_texts: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old").write_text("x")
    with pytest.raises(NaturalDataError, match="not empty"):
        build_natural_dataset("text", [two_texts], out, progress=False)
    build_natural_dataset("text", [two_texts], out, overwrite=True, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "data", "kt_data.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "texts"]


# --- CLI ----------------------------------------------------------------------------------------------------------


def test_cli_writes_the_dataset(two_texts: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out"
    argv = ["kt-data", "--modality", "text", "--input", str(two_texts / "b.txt"), str(two_texts / "a.txt")]
    assert main([*argv, "--output", str(out), "--sequence-length", "4", "--shuffle", "--quiet"]) == 0
    assert "wrote 5 text sequences" in capsys.readouterr().out
    written = manifest(out)
    assert written["shuffle"] and written["seed"] == 0 and written["command"].startswith("kt kt-data --modality text")
    assert sorted(r["source"] for r in rows(out)) == ["a.txt"] * 3 + ["b.txt"] * 2


@pytest.mark.parametrize(
    ("modality", "name", "content", "message"),
    [
        ("text", "missing.txt", None, "no such file or directory"),
        ("audio16", "fake.wav", "not audio", "not a readable audio file"),
        ("mfcc", "fake.wav", "not audio", "not a readable audio file"),
        ("text", "empty.txt", "", "empty input"),
        ("dna", "n.fa", ">x\nNNNN\n", "empty input (no A/C/G/T symbols)"),
        ("dna", "folder/x.txt", "ACGT", "no dna files"),
    ],
)
def test_cli_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture, modality, name, content, message) -> None:
    source, out = tmp_path / name, tmp_path / "out"
    if content is not None:
        source.parent.mkdir(exist_ok=True)
        source.write_text(content)
    if name.startswith("folder/"):
        source = source.parent
    assert main(["kt-data", "--modality", modality, "--input", str(source), "--output", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kt: error: ") and message in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_cli_refuses_a_non_empty_output(two_texts: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep").write_text("x")
    assert main(["kt-data", "--modality", "text", "--input", str(two_texts), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not empty" in err and "--overwrite" in err
    assert (out / "keep").read_text() == "x"
