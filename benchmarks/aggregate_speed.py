"""Summary speed: re-summarise finished results from their scores and check that nothing changed.

For each result folder under RESULTS (a ``cultureboard evaluate`` output, e.g. the demo's ``results/`` or
``benchmarks/_work/site-speed/five-families/results`` kept by ``site_speed.py --keep``), the summary is
recomputed from ``scores.parquet`` through the engine's own writer (into a temporary folder) and compared with
the stored ``summary.json``; prints, per result, the score rows, the metric x slice entries, the seconds spent
in ``aggregate.summarize`` and in the whole writer, and their ratio. The machine is shared: compare the numbers
of one run with each other.

    python benchmarks/aggregate_speed.py RESULTS DATASET
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
from cultureboard.evaluators.engine import evaluate
from cultureboard.evaluators.engine.registry import family_of
from cultureboard.evaluators.results import aggregate

from cultureboard.dataset_folder import read_prompt_set


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("dataset", type=Path)
    args = parser.parse_args()
    spent = {"summarize": 0.0}

    def timed(*a, **k):
        start = time.perf_counter()
        try:
            return aggregate.summarize(*a, **k)
        finally:
            spent["summarize"] += time.perf_counter() - start

    evaluate.summarize = timed  # the writer's own call, measured
    print("| result | rows | entries | summarize s | writer s | share |\n|---|---|---|---|---|---|")
    changed = []
    with tempfile.TemporaryDirectory() as tmp:
        for folder in sorted(p for p in args.results.iterdir() if (p / "summary.json").is_file()):
            stored = json.loads((folder / "summary.json").read_text())
            provenance = stored["provenance"]
            family, pspec = family_of(provenance["prompt_set"])
            prompts = {r["prompt_id"]: r for r in read_prompt_set(args.dataset, provenance["prompt_set"])}
            table = pq.read_table(folder / "scores.parquet")
            spent["summarize"] = 0.0
            start = time.perf_counter()
            out = evaluate._write_results(Path(tmp) / folder.name, table, provenance, family, pspec, prompts)
            total = time.perf_counter() - start
            again = json.loads((out / "summary.json").read_text())
            if again["metrics"] != stored["metrics"]:
                changed.append(folder.name)
            print(f"| {folder.name} | {table.num_rows:,} | {len(again['metrics']):,} | {spent['summarize']:.2f} | "
                  f"{total:.2f} | {spent['summarize'] / total:.0%} |")
    if changed:
        sys.exit(f"summaries differ from the stored ones: {', '.join(changed)}")
    print("\nevery summary equals the stored one")


if __name__ == "__main__":
    main()
