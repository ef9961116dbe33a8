"""DNA sequences: the paper's fifth family (10 categories), from tandem repeats to FASTA records."""

from __future__ import annotations

import random
from collections.abc import Callable

Generated = tuple[str, dict]

BASES = "ACGT"
COMPLEMENT = str.maketrans("ACGT", "TGCA")
STOP_CODONS = ("TAA", "TAG", "TGA")
SENSE_CODONS = tuple(a + b + c for a in BASES for b in BASES for c in BASES if a + b + c not in STOP_CODONS)


def _bases(rng: random.Random, k: int) -> str:
    return "".join(rng.choices(BASES, k=k))


def reverse_complement(seq: str) -> str:
    """The reverse complement of a DNA string."""
    return seq.translate(COMPLEMENT)[::-1]


def random_sequence(rng: random.Random) -> Generated:
    """Uniform random bases."""
    n = rng.randint(50, 120)
    return _bases(rng, n), {"length": n}


def motif_repeat(rng: random.Random) -> Generated:
    """A short motif repeated end to end: `CACACA...`."""
    motif = _bases(rng, rng.randint(2, 4))
    n = rng.randint(5, 12)
    return motif * n, {"motif": motif, "repeat": n}


def palindrome_rc(rng: random.Random) -> Generated:
    """A reverse-complement palindrome (a restriction-site-like string), possibly doubled: `AAGCTT`."""
    half = _bases(rng, rng.randint(3, 6))
    site = half + reverse_complement(half)
    n = rng.randint(1, 2)
    return site * n, {"site": site, "repeat": n}


def orf_like(rng: random.Random) -> Generated:
    """An open reading frame: ATG, sense codons, then a stop codon."""
    codons = rng.randint(20, 55)
    body = "".join(rng.choices(SENSE_CODONS, k=codons))
    return "ATG" + body + rng.choice(STOP_CODONS), {"codons": codons + 2}


def microsatellite(rng: random.Random) -> Generated:
    """A short tandem repeat between random flanks."""
    motif = _bases(rng, rng.randint(2, 4))
    n = rng.randint(6, 16)
    left, right = _bases(rng, rng.randint(8, 25)), _bases(rng, rng.randint(8, 25))
    return left + motif * n + right, {"motif": motif, "repeat": n}


def snp_variants(rng: random.Random) -> Generated:
    """A random sequence with a few single-base substitutions of itself appended: reference then variant."""
    reference = _bases(rng, 60)
    variant = list(reference)
    positions = sorted(rng.sample(range(60), rng.randint(1, 4)))
    for pos in positions:
        variant[pos] = rng.choice([b for b in BASES if b != reference[pos]])
    return reference + "".join(variant), {"positions": positions}


def gc_clamp(rng: random.Random) -> Generated:
    """A random core between long G/C runs (a GC clamp at both ends)."""
    left = "".join(rng.choices("GC", weights=(4, 1), k=rng.randint(8, 20)))
    right = "".join(rng.choices("GC", weights=(1, 4), k=rng.randint(8, 20)))
    core = _bases(rng, rng.randint(40, 70))
    return left + core + right, {"clamp": (len(left), len(right))}


def fasta_record(rng: random.Random) -> Generated:
    """A FASTA record: a `>id` header, then the sequence wrapped at 60 bases per line."""
    name = f"seq_{rng.randint(0, 99)}"
    seq = _bases(rng, rng.randint(120, 260))
    lines = [seq[i : i + 60] for i in range(0, len(seq), 60)]
    return "\n".join([f">{name}", *lines]), {"id": name, "length": len(seq)}


def codon_repeat(rng: random.Random) -> Generated:
    """One codon repeated many times (a trinucleotide expansion: `GCTGCTGCT...`)."""
    codon = rng.choice(SENSE_CODONS)
    n = rng.randint(60, 100)
    return codon * n, {"codon": codon, "repeat": n}


def kmer_concat(rng: random.Random) -> Generated:
    """Distinct k-mers (k = 3 or 4) concatenated in random order."""
    k = rng.choice((3, 4))
    count = rng.randint(9, 32)
    kmers = set()
    while len(kmers) < count:
        kmers.add(_bases(rng, k))
    ordered = sorted(kmers)
    rng.shuffle(ordered)
    return "".join(ordered), {"k": k, "kmers": count}


GENERATORS: dict[str, Callable[[random.Random], Generated]] = {
    "random": random_sequence,
    "motif_repeat": motif_repeat,
    "palindrome_rc": palindrome_rc,
    "orf_like": orf_like,
    "microsatellite": microsatellite,
    "snp_variants": snp_variants,
    "gc_clamp": gc_clamp,
    "fasta_record": fasta_record,
    "codon_repeat": codon_repeat,
    "kmer_concat": kmer_concat,
}
