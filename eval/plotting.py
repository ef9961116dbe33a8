"""What every plot of the evaluations shares: matplotlib's Agg backend, a heading of two lines (what the plot shows;
the model, the data and n), series styles that stay apart when lines coincide, and PNG files."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

DPI = 120
LINE_STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure(size: tuple[float, float], **options: Any) -> Any:
    """A figure with constrained layout (headings, colour bars and legends outside the axes get their room)."""
    return pyplot().figure(figsize=size, layout="constrained", **options)


def heading(fig: Any, title: str, caption: str) -> None:
    """The figure's title with a caption line under it (model, data, n)."""
    fig.suptitle(f"{title}\n{caption}", fontsize=10)


def style(index: int) -> dict[str, Any]:
    """The line style, marker and colour of series `index`: markers and dashes differ, so coinciding lines and
    points of several series stay visible."""
    return {
        "color": f"C{index % 10}",
        "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
        "marker": MARKERS[index % len(MARKERS)],
    }


def count(n: int, noun: str) -> str:
    """'1 sequence', '93 sequences'."""
    return f"{n} {noun if n == 1 else noun + 's'}"


def joined(parts: Iterable[str | None]) -> str:
    """The given parts of a caption, separated by middle dots."""
    return " · ".join(p for p in parts if p)


def save(fig: Any, path: str | Path) -> Path:
    """Write `fig` as a PNG (legends outside the axes included) and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    pyplot().close(fig)
    return path


def texts(fig: Any) -> list[str]:
    """Every text drawn on `fig` (titles, labels, annotations, legends): what a reader of the PNG sees."""
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_text() and t.get_visible()]


__all__ = ["DPI", "count", "figure", "heading", "joined", "pyplot", "save", "style", "texts"]
