"""A fully cached rerun of every family against its import floor (goal: at most 2x).

For each family's world of tests/test_determinism.py (tiny stand-in scorers, a few dozen images): one `evaluate`
fills a cache, then, each in a fresh process, timed:
  rerun  `evaluate` again on the filled cache (it must import no torch: printed as `torch imported`)
  floor  import numpy, pandas and pyarrow and sha256 every image of the submission (what no rerun can avoid)
and the ratio rerun / floor. Ratios of one run compare; absolute seconds vary with the machine's load.

    python benchmarks/rerun_floor.py [--families cultdiff ecb ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"

FLOOR = """
import hashlib, json, sys
import numpy, pandas, pyarrow, pyarrow.parquet
root = sys.argv[1]
for line in open(root + "/metadata.jsonl"):
    if line.strip() and not json.loads(line).get("refused"):
        hashlib.sha256(open(root + "/" + json.loads(line)["file_name"], "rb").read()).hexdigest()
"""


def timed(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, done.stdout


def main() -> None:
    sys.path.insert(0, str(TESTS))
    from test_determinism import WORLDS

    from cultureboard.evaluators import evaluate
    from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers

    parser = argparse.ArgumentParser()
    parser.add_argument("--families", nargs="*", default=sorted(WORLDS), choices=sorted(WORLDS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        save_tiny_scorers(root / "tiny")
        print(f"{'family':<16}{'rerun s':>9}{'floor s':>9}{'ratio':>7}  torch imported")
        for family in args.families:
            home = root / family
            world = WORLDS[family](home, root / "tiny" / TINY_CONFIG)
            settings = dict(scorers=world["scorers"] if isinstance(world["scorers"], dict) else str(world["scorers"]),
                            device="cpu", cache=str(home / "cache"), n_boot=50, options=world["options"])
            evaluate(world["submission"], world["dataset"], home / "first", **settings)
            script = (f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
                      + "".join(f"import {module}\n" for module in world.get("imports", []))
                      + "from cultureboard.evaluators import evaluate\n"
                      f"evaluate({str(world['submission'])!r}, {str(world['dataset'])!r}, {str(home / 'rerun')!r}, "
                      f"**{settings!r})\nprint('torch' in sys.modules)")
            rerun, out = timed([sys.executable, "-c", script])
            floor, _ = timed([sys.executable, "-c", FLOOR, str(world["submission"])])
            print(f"{family:<16}{rerun:>9.2f}{floor:>9.2f}{rerun / floor:>7.2f}  {out.strip().splitlines()[-1]}",
                  flush=True)


if __name__ == "__main__":
    main()
