"""Benchmark ``site build`` at scale: N submissions of each of the five families, every slice, every page.

    .venv/bin/python benchmarks/site_speed.py [--submissions 200] [--media local|hub] [--countries IT,NG,ES,...]
                                              [--no-thumbnails] [--workers N] [--keep] [--workdir DIR]

1. Real results, once (kept with ``--keep``) in ``benchmarks/_work/site-speed``: the dataset of the sample dump
   for ``--countries`` (default: the build's 13 default countries) with every prompt set of the five families
   (CuRe's ladder, the CULTIVate catalogue and the ECB slice at the demo's small sizes), synthetic reference
   photographs, one submission per prompt set of seeded 64 px colour blocks, each evaluated by the tiny random
   stand-in scorers through the real engine (``tests/site_worlds.py``, the site tests' world).
2. N submissions per family: copies of that family's real result under new ids with every value shifted and
   noised (``site_worlds.variant``; CULTIVate's stand-in judge flags every row, so its copies get values), each
   with its own copy of the images, so every submission gets its own thumbnails; with ``--no-thumbnails`` the
   images are "on the Hub" (no local files, no thumbnails).
3. With ``--media hub`` the image files are made first, as ``cultureboard publish media`` makes them (timed apart:
   in the workflows they go to the results dataset, not to GitHub Pages; nothing is uploaded here, the record
   names a stand-in commit), and the site links them there. The validator's per-process memory of perceptual
   hashes is turned off: the synthesised submissions share their images' bytes, which real submissions do not.
4. Times ``build_site`` into an empty folder (every thumbnail made), then, after one more submission of the first
   family is added, a rebuild into the same folder (what the previous build proved unchanged is reused, as when CI
   restores the previous site), and prints a Markdown table with each figure's ratio to its target: first build
   at most 4 minutes, rebuild after one new submission at most 30 s, the site at most 1 GB (GitHub Pages' limit)
   and every page under 200 KB, with the phases (images, pages), pages and the site by file type. The machine is
   shared: compare the numbers of one run with each other, not across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the site tests' world of real results of every family

import site_worlds

GENERATOR_VERSION = 4  # 4: the CULTIVate submission declares a refused prompt (site_worlds.REFUSED)
WORK = ROOT / "benchmarks" / "_work" / "site-speed"
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp"}
TARGET_FIRST, TARGET_REBUILD, TARGET_KB, TARGET_MB = 240.0, 30.0, 200.0, 1000.0
STAND_IN_COMMIT = "0" * 40  # the media record's commit: nothing is uploaded


def real_results(work: Path, countries: list[str] | None) -> dict:
    """One evaluated submission per prompt set (site_worlds' world, for these countries)."""
    from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers

    save_tiny_scorers(work / "tiny")
    from cultureboard.builder.build import DEFAULT_COUNTRIES

    site_worlds.COUNTRIES = countries or DEFAULT_COUNTRIES
    return site_worlds.five_families(work, work / "tiny" / TINY_CONFIG)


def synthesise(world: dict, n: int, thumbnails: bool, out: Path) -> dict[str, int]:
    """``n`` submissions per family from its first real result; returns submissions per prompt set."""
    results, submissions = out / "results", out / "submissions"
    shutil.rmtree(out, ignore_errors=True)
    counts = {}
    for k, (prompt_set, ids) in enumerate(sorted(world["ids"].items())):
        for i in range(n):
            sid = site_worlds.variant(world["results"], world["submissions"], ids[0], f"{prompt_set}-{i:02d}",
                                      0.004 * (i - n / 2), 1000 * k + i, results, submissions,
                                      unflag=prompt_set == "cultivate")
            if not thumbnails:
                spec = yaml.safe_load((submissions / sid / "submission.yaml").read_text())
                spec["images"]["location"] = f"hf://datasets/bench/{sid.replace('__', '-')}@{'0' * 40}"
                (submissions / sid / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
                shutil.rmtree(submissions / sid / "images")
        counts[prompt_set] = n
    return counts


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the thumbnail workers): less sensitive than wall
    time to other work on a shared machine."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def site_sizes(out: Path) -> dict:
    pages = sorted(out.rglob("*.html"))
    by_type: dict[str, list[int]] = defaultdict(list)
    for f in out.rglob("*"):
        if f.is_file():
            by_type[f.suffix.lower() or "(none)"].append(f.stat().st_size)
    largest = max(pages, key=lambda p: p.stat().st_size) if pages else None
    return {"pages": len(pages), "largest": largest.relative_to(out).as_posix() if largest else None,
            "largest_kb": largest.stat().st_size / 1024 if largest else 0.0,
            "html_mb": sum(by_type[".html"]) / 1e6,
            "images": sum(len(v) for k, v in by_type.items() if k in IMAGE_SUFFIXES),
            "by_type": {k: (len(v), sum(v)) for k, v in sorted(by_type.items())}}


def _one_more(world: dict, n: int, thumbnails: bool, out: Path) -> str:
    """Add one submission of the first family (the next variant after the ``n`` synthesised); returns its id."""
    prompt_set, ids = sorted(world["ids"].items())[0]
    sid = site_worlds.variant(world["results"], world["submissions"], ids[0], f"{prompt_set}-new", 0.001, 999_999,
                              out / "results", out / "submissions")
    if not thumbnails:
        shutil.rmtree(out / "submissions" / sid / "images")
    return sid


def _media(bench: Path, workers) -> tuple[float, float]:
    """Make the image files as ``publish media`` does (nothing uploaded) and record them; (wall, CPU) seconds."""
    from cultureboard.site import media_hub
    from cultureboard.site.load import load_results

    started, cpu = time.perf_counter(), _cpu_seconds()
    made = media_hub.make_media(load_results(bench / "results", bench / "submissions")[0], bench / "media",
                                workers=workers)
    media_hub.record(bench / "media", "bench/results", STAND_IN_COMMIT, made["media"])
    return time.perf_counter() - started, _cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=200, help="submissions per family")
    parser.add_argument("--media", choices=("local", "hub"), default="hub",
                        help="images copied into the site, or linked from the results dataset (site/media_hub.py)")
    parser.add_argument("--countries", help="comma-separated ISO codes (default: the build's default countries)")
    parser.add_argument("--no-thumbnails", dest="thumbnails", action="store_false",
                        help="submissions without local images (images on the Hub): the site has no thumbnails")
    parser.add_argument("--workers", type=int, help="thumbnail worker processes (default: the CPU count)")
    parser.add_argument("--keep", action="store_true", help="keep the generated inputs and the site for the next run")
    parser.add_argument("--workdir", type=Path, default=WORK, help=f"where inputs and the site go (default {WORK})")
    args = parser.parse_args()
    work = args.workdir.resolve()
    if work.is_dir() and any(work.iterdir()) and not (work / "meta.json").is_file():
        sys.exit(f"{work} holds other files: pass an empty or new --workdir (this script deletes and rewrites it)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from cultureboard.evaluators.submission.rules import copies
    from cultureboard.site.render import build_site

    # The synthesised submissions share their images' bytes, which real ones do not: keep the validator from
    # remembering perceptual hashes across folders (it would hash each image once for all N copies).
    copies._HASHES_KEPT = 0

    countries = args.countries.split(",") if args.countries else None
    wanted = {"generator": GENERATOR_VERSION, "countries": countries}
    meta = work / "meta.json"
    if not (meta.is_file() and json.loads(meta.read_text()) == wanted):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        started = time.perf_counter()
        real_results(work, countries)
        meta.write_text(json.dumps(wanted))
        print(f"real results of every family in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    world = site_worlds.five_families(work, None)  # read back
    started = time.perf_counter()
    bench = work / "bench"
    counts = synthesise(world, args.submissions, args.thumbnails, bench)
    print(f"synthesised {sum(counts.values())} submissions in {time.perf_counter() - started:.1f} s", file=sys.stderr)

    out, hub = bench / "site", args.media == "hub"
    times, cpus, infos, media_times = [], [], [], []
    for r in range(2):
        if r == 1:
            _one_more(world, args.submissions, args.thumbnails, bench)
        if hub:
            media_times.append(_media(bench, args.workers))
        started, cpu = time.perf_counter(), _cpu_seconds()
        infos.append(build_site(bench / "results", world["dataset"], bench / "submissions", out, workers=args.workers,
                                media=args.media, media_from=bench / "media" if hub else None))
        times.append(time.perf_counter() - started)
        cpus.append(_cpu_seconds() - cpu)
        print(f"  {'build' if r == 0 else 'rebuild after one new submission'}: {times[-1]:.2f} s, CPU {cpus[-1]:.1f} s, "
              f"load {os.getloadavg()[0]:.1f}, {infos[-1]['phases']}", file=sys.stderr)
        if r == 0:
            sizes = site_sizes(out)  # the site of N submissions per family
    site_mb = sum(b for _, b in sizes["by_type"].values()) / 1e6

    images = {ps: sum(1 for line in (world["submissions"] / ids[0] / "metadata.jsonl").read_text().splitlines()
                      if '"refused"' not in line) for ps, ids in world["ids"].items()}
    print(f"\n{args.submissions} submissions of each prompt set ({', '.join(f'{ps}: {n} images' for ps, n in sorted(images.items()))} "
          f"each; countries {','.join(countries or ['the 13 defaults'])}), media {args.media}, thumbnails "
          f"{'from 64 px local PNGs' if args.thumbnails else 'off (images on the Hub)'}; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}\n")
    print("| measure | value | target |")
    print("|---|---|---|")
    first = infos[0]["phases"]
    if hub:
        print(f"| media made for the results dataset (not in the site) | {media_times[0][0]:.1f} s (CPU "
              f"{media_times[0][1]:.1f} s); after one new submission {media_times[1][0]:.1f} s | |")
    print(f"| first build | {times[0]:.1f} s (images {first['images']:.1f} s, pages {first['pages']:.1f} s of which "
          f"validating the folders {first['validation']:.1f} s; CPU {cpus[0]:.1f} s) | < {TARGET_FIRST:.0f} s ({times[0] / TARGET_FIRST:.2f}x) |")
    phases = infos[1]["phases"]
    print(f"| rebuild after one new submission | {times[1]:.1f} s (images {phases['images']:.1f} s, pages "
          f"{phases['pages']:.1f} s of which validating {phases['validation']:.1f} s; CPU {cpus[1]:.1f} s) | < {TARGET_REBUILD:.0f} s ({times[1] / TARGET_REBUILD:.2f}x) |")
    print(f"| site (every file) | {site_mb:,.1f} MB | < {TARGET_MB:,.0f} MB ({site_mb / TARGET_MB:.2f}x) |")
    print(f"| thumbnails | {infos[0]['thumbnails']:,} published, {infos[0]['missing_images']:,} missing | |")
    print(f"| pages | {sizes['pages']:,} | |")
    print(f"| largest HTML page | {sizes['largest_kb']:.1f} KB (`{sizes['largest']}`) | < {TARGET_KB:.0f} KB "
          f"({sizes['largest_kb'] / TARGET_KB:.2f}x) |")
    print(f"| all HTML | {sizes['html_mb']:.1f} MB | |")
    print("\nfiles by type: " + ", ".join(f"{k} {n:,} ({b / 1e6:.1f} MB)" for k, (n, b) in sizes["by_type"].items()))
    met = (times[0] < TARGET_FIRST and times[1] < TARGET_REBUILD and sizes["largest_kb"] < TARGET_KB
           and site_mb < TARGET_MB)
    print(f"\ntargets {'met' if met else 'NOT met'}")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
