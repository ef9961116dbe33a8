"""Data flows one way: kt_train's runtime modules never import the data packages, and the producers (dsl,
tracegen) never import the scorer (eval); no package imports the recipes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA_PACKAGES = {"dsl", "tracegen", "eval"}


def _imported_roots(path: Path) -> set[str]:
    """Every top-level package `path` imports, at module level or inside functions (lazy imports count too)."""
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


PRODUCERS = sorted(p for package in ("dsl", "tracegen") for p in (ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", PRODUCERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_producers_do_not_import_the_scorer(path: Path) -> None:
    assert not _imported_roots(path) & {"eval", "recipes"}


@pytest.mark.parametrize("path", sorted((ROOT / "eval").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_eval_does_not_import_the_recipes(path: Path) -> None:
    assert "recipes" not in _imported_roots(path)


def test_the_check_sees_lazy_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from eval.kt import scoring\n    import tracegen.records\n")
    assert _imported_roots(module) == {"eval", "tracegen"}


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports by name (`from a.b import c` gives `a.b`), lazy imports included."""
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


@pytest.mark.parametrize("path", sorted((ROOT / "recipes").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_recipes_reach_evaluation_only_through_post_training(path: Path) -> None:
    """A recipe wires data, training and the evaluation after training (`eval.post_training`); it imports no
    evaluation protocol or scorer of its own (a data filter it needs belongs to the data package)."""
    evaluation = {m for m in _imported_modules(path) if m == "eval" or m.startswith("eval.")}
    assert evaluation <= {"eval.post_training"}, evaluation


LIBRARY = sorted(
    p for package in ("kt_train", "dsl", "tracegen", "eval", "recipes") for p in (ROOT / package).rglob("*.py")
)


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_cli_runs_cli_commands(path: Path) -> None:
    """Code calls the functions behind a command (`build_eval_set`, `make_suite`, ...), never `kt_train.cli.main`
    with an argv: that is for the command line, its tests and benchmarks."""
    calls = {
        node.func.id
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert path.name == "cli.py" or "kt_main" not in calls
