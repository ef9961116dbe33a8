"""Data flows one way: kt_train's runtime modules never import the data packages."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA_PACKAGES = {"dsl", "tracegen", "eval"}


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("path", sorted((ROOT / "kt_train").rglob("*.py")), ids=lambda p: p.name)
def test_kt_train_does_not_import_data_packages(path: Path) -> None:
    assert not _imported_roots(path) & DATA_PACKAGES
