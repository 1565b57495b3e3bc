"""``cultureboard build site``: render the static leaderboard site from results, submissions and the dataset.

Layout of the output folder (every link is relative, so the site works opened from ``file://`` as well as
served; no page requests anything from another site)::

    index.html                          overview: per family and prompt set, the top of its leaderboard
    leaderboard/<prompt set>.html       the full leaderboards, controls, figures and the disparity ranking
    family/<family>.html                what a family measures, its metric cards, the paper's own numbers (reported)
    slices.html, country/<ISO>.html,    one page per country, region group and continent, era and category
    region/<slug>.html, era/<slug>.html, category/<slug>.html
    topics.html, topic/<slug>.html      one topic across families (food: CUBE's cuisine, ECB's food, ...), site/data/topics.yaml
    model/<id>.html                     model card, provenance, per-slice table, disparity
    models/<org>__<model>.html          one model: each prompt set's headline, a per-country table, its card
    compare.html, models/<key>.data.js  two models side by side, drawn in the browser from each model's data script
    model/<id>/images-<n>.html          image browser: ``page_size`` images a page with scores and explanations
    gallery/<prompt set>.html           the prompts, filterable; prompt/<prompt set>/<prompt>.html: every
                                        submission's images of one prompt side by side
    map/<group>/<metric>.html           a world map of a metric per country, a submission chosen by the reader
    metrics.html, metric/<name>.html    metric cards, validity (ours and reported), leaderboards
    trust.html                          where each metric tracks human judgement (from --ratings)
    evidence.html                       every metric card's validity tier and why (the tier rule)
    submissions.html                    every submission folder: invalid, not scored, stale or scored (and by what)
    agreement.html                      do the benchmarks agree: Kendall's tau between families' rankings of models
    cache/validation.json               what validate found of each submission folder, reused by the next build
    data/<page>-<table>.csv|.json       every table of every page
    data/scores.csv.gz|.parquet         every (submission, metric, slice) value with CI, flags and provenance
    plots/<page>-<plot>.svg             heatmaps, maps, bars, curves, frontier
    thumbs/<id>/<sha256>.webp           thumbnails, longer side ``thumb_px``; images/<id>/<sha256>.<ext> full size
                                        (with ``--media hub`` neither: the pages link them on the Hub, site/media_hub.py)
    static/style.css, static/app.js     sorting, filtering and the map's choice (vanilla JS, no network access)
    search-index.js, static/search.js   the header's search box over models, slices, metrics, artifacts, prompts

Every page carries a banner when any result was scored by tiny random stand-in scorers or the ratings are
synthetic (the demo's), and the build date and
code version in its footer. The modules: :mod:`.load` (results), :mod:`.board` (groups, ranks and everything
derived), :mod:`.leaderboards`, :mod:`.figures`, :mod:`.details`, :mod:`.gallery` (pages), :mod:`.write`
(Jinja, downloads), :mod:`.plots` and :mod:`.worldmap` (SVG), :mod:`.thumbs` (image files), :mod:`.trust` and
:mod:`.entangle`.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import shutil
import time
from pathlib import Path

from cultureboard import __version__
from cultureboard.atomic import atomic_dir, check_replaceable
from cultureboard.errors import CultureboardError
from cultureboard.dataset_folder import read_prompt_set
from cultureboard.provenance import git_commit

from . import agreement_page, compare, details, figures, flat_file, gallery, leaderboards, models, topics
from . import held_out as held_out_site
from .board import Board
from .country_sources import built_countries
from .load import load_results as _load_results
from .names import MIN_PROMPTS
from .search_index import write_search_index
from .submissions_page import submissions_page
from .thumbs import start_media
from .human import load_human
from .media_hub import HUB_CSP, Published, read_published
from .trust import load_trust
from .write import CSP, HERE, Site

__all__ = ["CSP", "MEDIA", "build_site"]
#: Where the pages' images come from: copied into the site, or linked from the results dataset on the Hub.
MEDIA = ("local", "hub")


def build_site(results: str | Path, dataset: str | Path, submissions: str | Path, out: str | Path, *,
               ratings=None, page_size: int = 48, thumb_px: int = 256, built: str | dt.date | None = None,
               workers: int | None = None, order: str = "value", held_out: str | Path | None = None,
               media: str = "local", media_from: str | Path | None = None) -> dict:
    """Render the site from ``results`` (``<id>/summary.json`` and ``scores.parquet``), ``submissions``
    (``<id>/submission.yaml``, ``metadata.jsonl`` and images) and ``dataset`` (prompt texts) into ``out``.

    ``ratings``: a ratings folder (or its ``validity.json`` / ``correlations.json``), or a list of them, whose
    correlations with human judgements are shown on the metric pages and the trust page (and whose
    ``ratings.parquet``, where it has one, gives each rated submission a human score, shown first on its boards:
    :mod:`.human`); a metric that is only a
    diagnostic on a slice is greyed there and never ranks it. ``built``: the build date shown in every footer
    (default: ``SOURCE_DATE_EPOCH`` if set, else today, UTC). ``workers``: thumbnail worker processes (default:
    the CPU count). ``order``: how ranked submissions are ordered, ``value`` (the point value) or ``lcb`` (the
    pessimistic end of the CI: :data:`.board.ORDERS`); rank ranges are the same either way. ``held_out``: a folder
    of held-out records (``cultureboard evaluate-held-out``): a held-out column, the gap on model pages and
    held-out.html (site/held_out.py). ``media``: ``local`` (the images copied into the site) or ``hub`` (linked
    from the results dataset on the Hub, as ``cultureboard publish media`` recorded them in the folder
    ``media_from``: :mod:`.media_hub`; no image file is written into the site). The image files of an
    earlier build in ``out`` are reused where they are proven unchanged (:mod:`.thumbs`: the site is then what a fresh
    build would make); ``out`` is replaced atomically. A result that cannot be shown is left out, named in
    every page's footer and in ``skipped``; an image whose bytes are not the declared, valid ones is not published
    and is listed in ``unverified``. Returns {out, pages, largest_page, largest_page_bytes, thumbnails,
    missing_images, skipped, unverified, seconds, phases: {load, images, pages, validation, replace} seconds}: the
    images are made while the pages are rendered, so ``images`` is the time this process spent on them (planning the
    jobs, waiting for the workers when a page needed images not done yet) and ``pages`` the time it spent rendering
    (``validation``, part of it: validating the submission folders for submissions.html).
    """
    start = time.perf_counter()
    results, out = Path(results), Path(out)
    if media not in MEDIA:
        raise CultureboardError("--media", f"is {media!r}", f"pass one of {', '.join(MEDIA)}", exit_code=2)
    published = read_published(media_from) if media == "hub" else None  # before the work
    check_replaceable(out, kind="site")  # before the work
    loaded, skipped = _load_results(results, Path(submissions))
    prompts = {p["prompt_id"]: p for ps in sorted({r.prompt_set for r in loaded}) for p in read_prompt_set(dataset, ps)}
    given = [] if ratings is None else list(ratings) if isinstance(ratings, (list, tuple)) else [ratings]
    board = Board({r.sid: r for r in loaded}, prompts, load_trust(given), order_by=order,
                  held_out=held_out_site.load(held_out, dataset), human=load_human(given))
    with atomic_dir(out, kind="site") as tmp:
        site = Site(tmp, {"skipped": skipped, "footer": _footer(board, built), "banner": _banner(board),
                          "galleries": gallery.gallery_links(board),
                          "held_out_page": board.held_out["split"] is not None}, previous=out)
        if published is not None:
            site.env.globals["csp"] = HUB_CSP
        shutil.copytree(HERE / "static", tmp / "static")
        loaded_at = time.perf_counter()
        with (Published(published["media"]) if published is not None else
              start_media(board.results.values(), out, tmp, thumb_px, workers=workers)) as pending:
            started_at = time.perf_counter()
            # while the workers make the image files: every page that shows no image, the slowest first
            validating_at = time.perf_counter()
            submissions_page(site, Path(submissions), results, Path(dataset), previous=out,
                             summaries={sid: r.summary for sid, r in board.results.items()})
            validated = time.perf_counter() - validating_at
            topical = topics.topic_pages(site, board)
            site.env.globals["topics"] = topical["topics"]  # the home page's "which model for ...?" links
            site.env.globals["flat"] = flat_file.write_flat_file(site, board)  # linked from the home page
            leaderboards.overview(site, board)
            leaderboards.prompt_set_pages(site, board)
            leaderboards.slice_pages(site, board, built_countries=built_countries(Path(dataset)),
                                     topics=topical["by_category"])
            details.metric_pages(site, board)
            details.family_pages(site, board)
            figures.map_pages(site, board)
            details.trust_page(site, board)
            details.evidence_page(site, board)
            agreement_page.agreement_page(site, board)
            if board.held_out["split"] is not None:
                held_out_site.page(site, board)
            # then each submission's pages as soon as its images are done (the workers take them in this order)
            first_images = {}
            for r in board.results.values():
                images = gallery.image_pages(site, board, r, pending.ready(r.sid), page_size)
                details.model_pages(site, board, r, images)
                first_images[r.sid] = images["image_pages"][0]
            media, unverified = pending.result()
        gallery.gallery_pages(site, board, media, page_size)
        models.overview_pages(site, board, first_images)
        compare.compare_pages(site, board, media)
        write_search_index(site, board)  # after the last page: it lists the pages written
        site.finish()  # records each page's key for the next build
        pages_at = time.perf_counter()
    largest = max(site.sizes, key=site.sizes.get)
    statuses = [m["status"] for m in media.values()]
    return {"out": str(out), "pages": len(site.sizes), "largest_page": largest,
            "largest_page_bytes": site.sizes[largest], "thumbnails": statuses.count("ok"),
            "missing_images": sum(s != "ok" for s in statuses), "skipped": skipped, "unverified": unverified,
            "seconds": round(time.perf_counter() - start, 3),
            "phases": {"load": round(loaded_at - start, 3), "images": round(started_at - loaded_at + pending.waited, 3),
                       "pages": round(pages_at - started_at - pending.waited, 3), "validation": round(validated, 3),
                       "replace": round(time.perf_counter() - pages_at, 3)}}


@functools.cache
def _code() -> str:
    git = git_commit()
    commit = (git.get("commit") or "unknown")[:12] + (" with uncommitted changes" if git.get("dirty") else "")
    return f"cultureboard {__version__} (git {commit})"


def _date(built) -> str:
    if built is not None:
        return str(built)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch and epoch.isdigit() else dt.datetime.now(dt.UTC)
    return moment.date().isoformat()


def _footer(board: Board, built) -> dict:
    """The provenance summary every page shows."""
    code, datasets, devices = set(), set(), set()
    for r in board.results.values():
        p = r.summary["provenance"]
        git = p["code"]["git"]
        commit = (git.get("commit") or "unknown")[:12] + (" with uncommitted changes" if git.get("dirty") else "")
        code.add(f"cultureboard {p['code']['cultureboard']} (git {commit})")
        datasets.add(p["dataset"]["revision"])
        devices.add(f"{p['device']} {p['dtype']}")
    return {"results": len(board.results), "code": sorted(code), "datasets": sorted(datasets), "devices": sorted(devices),
            "built": _date(built), "site_code": _code(), "min_prompts": MIN_PROMPTS,
            "order": "the point value" if board.order_by == "value" else
                     "the pessimistic end of the 95% CI (its lower bound where higher is better, its upper bound where "
                     "lower is better, the far end of the distance to a target)"}


def _banner(board: Board) -> dict | None:
    """The warning every page carries when any result was scored by tiny random stand-in scorers (``count`` of
    ``total``, the first ``names``), or when the ratings are synthetic (``synthetic``: their note, from
    ``site/trust.py``'s marker); None when neither."""
    synthetic = sorted({t["synthetic"] for t in board.trust_rows if t.get("synthetic")})
    if not board.standin and not synthetic:
        return None
    shown = [board.results[s].display for s in board.standin]
    return {"count": len(shown), "total": len(board.results), "names": shown[:5], "more": max(0, len(shown) - 5),
            "synthetic": " ".join(synthetic) or None}
