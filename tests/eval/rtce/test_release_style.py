"""`kt eval rtce` on a benchmark of the release's own prompts: the items carry where the prompt shows its given
value, and the round trip's second call is the release's I/P Pred prompt showing the model's own z."""

from __future__ import annotations

from pathlib import Path

from eval.rtce.items import load_items
from eval.rtce.roundtrip import roundtrip_prompt
from tests.tracegen.release_fixtures import RELEASE_INPUTS, expected_prompt, write_release, write_renderer
from tracegen.benchmark import build_benchmark


def test_roundtrip_prompt_is_the_release_prompt_with_the_models_z(tmp_path: Path) -> None:
    release = write_renderer(write_release(tmp_path / "release"))
    build_benchmark(tmp_path / "bench", release_dir=release, style="release", progress=False)
    items = load_items(tmp_path / "bench", ["lzw", "huffman"], ["input_pred"])
    assert len(items) == 2 * len(RELEASE_INPUTS)
    for item in items:
        assert item.prompt_style == "release" and item.given_span is not None
        assert item.prompt == expected_prompt(item.algorithm, "input_pred", item.x)
        assert roundtrip_prompt(item, [72, 105]) == expected_prompt(item.algorithm, "input_pred", item.x, [72, 105])
