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


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_every_current_cpython_is_admitted():
    from packaging.specifiers import SpecifierSet

    admitted = SpecifierSet(_project()["requires-python"])
    assert all(version in admitted for version in ("3.11.0", "3.12.5", "3.13.1")), admitted


def test_torch_is_a_range_in_the_dependencies_and_pinned_only_in_the_constraints():
    from packaging.requirements import Requirement

    wanted = {r.name: r for r in map(Requirement, _project()["dependencies"]) if r.name in ("torch", "torchvision")}
    assert set(wanted) == {"torch", "torchvision"}
    assert all("==" not in str(r.specifier) for r in wanted.values()), "a user's own torch build must not be replaced"
    pins = {Requirement(line).name: Requirement(line) for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")}
    for name, requirement in wanted.items():
        pinned = next(iter(pins[name].specifier)).version
        assert pinned in requirement.specifier, f"constraints.txt pins {name} {pinned} outside {requirement.specifier}"


def test_the_test_workflow_runs_the_oldest_and_newest_python():
    import yaml

    from packaging.specifiers import SpecifierSet

    job = yaml.safe_load((ROOT / ".github/workflows/tests.yml").read_text())["jobs"]["tests"]
    versions = job["strategy"]["matrix"]["python"]
    assert versions[0] == SpecifierSet(_project()["requires-python"]).__str__().removeprefix(">=")
    assert versions[-1] == "3.13" and "${{ matrix.python }}" in str(job["steps"])


def test_the_first_readme_command_chooses_the_cpu_build_without_a_gpu():
    import importlib.util
    import subprocess
    import sys

    spec = importlib.util.spec_from_file_location("torch_index", ROOT / "tools" / "torch_index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.pip_options(gpu=False, index_reachable=True) == ["--extra-index-url", module.CPU_INDEX]
    assert module.pip_options(gpu=True, index_reachable=True) == []
    assert module.pip_options(gpu=False, index_reachable=False) == []  # an offline mirror: PyPI's build
    readme = (ROOT / "README.md").read_text()
    assert "pip install -c constraints.txt $(python3 tools/torch_index.py) -e '.[ocr]' && cultureboard demo" in readme
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "torch_index.py")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() in ("", f"--extra-index-url {module.CPU_INDEX}")
