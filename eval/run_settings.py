"""The settings a resumable evaluation ran with: a rerun into the same folder with other settings is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SETTINGS_FILE = "settings.json"


def check_settings(output: Path, settings: dict[str, Any]) -> None:
    """Refuse to resume a run made with other settings; record the settings of a new one."""
    path = output / SETTINGS_FILE
    if path.is_file():
        before = json.loads(path.read_text(encoding="utf-8"))
        changed = sorted(k for k in settings.keys() | before.keys() if settings.get(k) != before.get(k))
        if changed:
            raise ValueError(f"{output} holds a run with other settings ({', '.join(changed)}); use a new --output")
    else:
        path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


__all__ = ["SETTINGS_FILE", "check_settings"]
