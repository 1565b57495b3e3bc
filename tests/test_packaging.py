"""Every Python package folder of the project is installed: a wheel (not only an editable install) holds it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_in_pyproject():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed, folders = set(config["packages"]), config["package-dir"]
    found = set()
    for name, folder in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            if not any(p.startswith((".", "_")) or p == "data" for p in parts):
                found.add(".".join((name, *parts)))
    assert found - listed == set(), f"pyproject.toml does not install {sorted(found - listed)}"
