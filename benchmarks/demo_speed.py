"""`cultureboard demo` as a new user runs it: a first run with an empty cache, then a rerun into a new folder.

Targets (issue 17): first run under 2 minutes and a rerun into a new folder under 30 s on the project's 2-core
machine, the first line at once. Each run is `python -m cultureboard.cli demo --json` in its own process with
the same fresh CULTUREBOARD_CACHE; the script times the first line the process prints (stderr, since --json
keeps stdout for the summary) and the whole process, and prints the demo's own step times (its --json
summary) with the ratios: generation to the rest of the first run, rerun to first run. `--runs N` repeats the
pair with a fresh cache each time and reports each. Absolute numbers depend on the machine's load (shared and
noisy here: compare ratios measured in one run).

    python benchmarks/demo_speed.py [--runs 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_demo(out: Path, cache: Path) -> dict:
    """One demo process: wall seconds, seconds to its first line, and its --json summary."""
    env = {**os.environ, "CULTUREBOARD_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cultureboard.cli", "demo", "--out", str(out), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first_line = proc.stderr.readline()
    first = time.perf_counter() - started
    rest, stdout = proc.stderr.read(), proc.stdout.read()
    proc.wait()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"demo failed ({proc.returncode}):\n{first_line}{rest}")
    return {"wall": wall, "first_line": first, "first_text": first_line.strip(), "summary": json.loads(stdout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="pairs of (first run, rerun), each with a fresh cache")
    parser.add_argument("--keep", type=Path, help="keep the outputs and caches in this folder")
    args = parser.parse_args()
    root = Path(args.keep or tempfile.mkdtemp(prefix="cultureboard-demo-speed-"))
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs at the start")
    try:
        for k in range(args.runs):
            cache = root / f"cache-{k}"
            shutil.rmtree(cache, ignore_errors=True)
            first = run_demo(root / f"first-{k}", cache)
            again = run_demo(root / f"rerun-{k}", cache)
            steps = first["summary"]["seconds"]
            rest = steps["total"] - steps["generate"]
            print(f"\nrun {k + 1}: first line after {first['first_line']:.2f} s: {first['first_text']!r}")
            print(f"{'step':<10} {'first run s':>12} {'rerun s':>9}")
            for step in steps:  # the demo's own steps, in its order, then its total
                print(f"{step:<10} {steps[step]:>12.1f} {again['summary']['seconds'][step]:>9.1f}")
            print(f"{'process':<10} {first['wall']:>12.1f} {again['wall']:>9.1f}   (Python start and imports included)")
            print(f"generation / rest of the first run: {steps['generate']:.1f} / {rest:.1f} s = "
                  f"{steps['generate'] / rest:.2f} (generation is {steps['generate'] / steps['total']:.0%} of it)")
            print(f"rerun / first run (processes): {again['wall'] / first['wall']:.2f}; "
                  f"reused from the cache: {len(again['summary']['cached'])} of "
                  f"{len(again['summary']['submissions']) + 2} (dataset, submissions and held-out images; the "
                  "controls are made anew)")
            print(f"targets: first run {first['wall']:.0f} s (under 120: {'met' if first['wall'] < 120 else 'NOT met'}), "
                  f"rerun {again['wall']:.0f} s (under 30: {'met' if again['wall'] < 30 else 'NOT met'})")
    finally:
        print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
