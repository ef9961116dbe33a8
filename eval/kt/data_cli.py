"""`kt kt-data`: cut natural files (text, DNA, audio) into a KT evaluation dataset (paper 003, §3.2, §A.1).

kt kt-data --modality text --input enwik9 --output data/kt/text
kt kt-data --modality audio8 --input LibriSpeech/dev-clean --shuffle --seed 0 --output data/kt/audio8
"""

from __future__ import annotations

import argparse
from pathlib import Path

from eval.kt.natural import MODALITIES, NaturalDataError, build_natural_dataset
from kt_train.cli import fail


def _kt_data(args: argparse.Namespace) -> int:
    try:
        manifest = build_natural_dataset(
            args.modality,
            [Path(p) for p in args.input],
            Path(args.output),
            sequence_length=args.sequence_length,
            max_bytes=args.max_bytes,
            seed=args.seed,
            shuffle=args.shuffle,
            overwrite=args.overwrite,
            progress=not args.quiet,
        )
    except (NaturalDataError, ValueError, OSError) as exc:
        return fail(str(exc))
    size = manifest["total_symbols"] * manifest["symbol_bits"] / 8
    print(
        f"wrote {manifest['num_sequences']} {manifest['modality']} sequences ({manifest['total_symbols']} symbols, "
        f"{size:,.0f} bytes) from {len(manifest['sources'])} file(s) to {args.output}"
    )
    if manifest["modality"] == "dna":
        print(f"  dropped {manifest['dropped_symbols']} non-ACGT characters")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `kt kt-data`."""
    parser = subparsers.add_parser("kt-data", help="Natural KT evaluation data (text, DNA, audio) as sequences.")
    parser.add_argument("--modality", required=True, choices=MODALITIES, help="Kind of input data.")
    parser.add_argument(
        "--input",
        required=True,
        nargs="+",
        metavar="PATH",
        help="Files, or directories whose files of the modality are taken sorted by name.",
    )
    parser.add_argument("--output", required=True, help="Dataset directory to write.")
    parser.add_argument("--sequence-length", type=int, default=128, help="Symbols per sequence (default 128).")
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=1_000_000,
        help="Stop once the sequences hold this many bytes (symbols * bits / 8; default 1 MB).",
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the file order with --shuffle (default 0).")
    parser.add_argument("--shuffle", action="store_true", help="Take the files in a seeded random order.")
    parser.add_argument("--overwrite", action="store_true", help="Replace an existing non-empty output directory.")
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")
    parser.set_defaults(handler=_kt_data)
