"""One topic taxonomy across families: topic/<slug>.html gathers every family's boards of a topic, and topics.html
lists the topics, the categories each gathers and why.

The families name their categories their own way (food is ``cuisine`` in CUBE and CuRe, ``food`` in CultDiff and
ECB, ``eating`` in CULTIVate); ``data/topics.yaml`` maps each category slice to one shared topic, with the reason.
A topic page opens with the answer a country page gives (:func:`.country_answer.slices_answer` over the topic's
category slices: per family and slice the rank ranges on the headline, and overall the median of each model's
family ranks), then each category's boards. A category of the board in no topic is listed on topics.html, with the
reason where the data file gives one.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import yaml

from cultureboard.errors import CultureboardError

from . import country_answer, leaderboards
from .board import Board
from .names import slice_name, slice_path
from .write import Column, Site

#: The taxonomy shipped with the site.
TOPICS_FILE = "data/topics.yaml"


@dataclass(frozen=True)
class Topic:
    slug: str
    title: str
    categories: dict  # category slice -> {families: [family names], reason}


def topic_path(slug: str) -> str:
    return f"topic/{slug}.html"


def load_topics() -> tuple[list[Topic], dict[str, str]]:
    """The topics of :data:`TOPICS_FILE` in file order, and the categories left out on purpose -> why. A category
    in two topics is refused: a board would be counted twice."""
    data = yaml.safe_load(resources.files(__package__).joinpath(TOPICS_FILE).read_text(encoding="utf-8"))
    topics, owner = [], {}
    for slug, spec in data["topics"].items():
        for category in spec["categories"]:
            if category in owner:
                raise CultureboardError(f"site/{TOPICS_FILE}", f"category {category!r} is in topics {owner[category]!r} "
                                        f"and {slug!r}", "keep each category in one topic")
            owner[category] = slug
        topics.append(Topic(slug, spec["title"], dict(spec["categories"])))
    return topics, dict(data.get("unmapped") or {})


def topic_of(topics: list[Topic], category: str) -> Topic | None:
    return next((t for t in topics if category in t.categories), None)


def topic_pages(site: Site, board: Board) -> dict:
    """topic/<slug>.html for each topic with a category on the board, and topics.html; returns {topics: [{title,
    href}] of the pages written (the home page links them), by_category: {category: {title, href}}} (each category
    page links its topic)."""
    topics, unmapped = load_topics()
    present = [s for t, s in board.slices() if t == "category"]
    written, listing = [], []
    for topic in topics:
        categories = [c for c in topic.categories if c in present]
        if not categories:
            continue
        path = topic_path(topic.slug)
        parts = [{"category": c, "name": slice_name("category", c), "href": slice_path("category", c),
                  **topic.categories[c],
                  "sections": leaderboards.sections(site, board, path, "category", c, headline_only=True,
                                                    prefix=f"{c}-")} for c in categories]
        answer = country_answer.slices_answer(board, [("category", c) for c in categories])
        site.page(path, "topic.html", f"Topic: {topic.title}", topic=topic, parts=parts, answer=answer,
                  answer_heading=f"Which model for {topic.title.lower()}?",
                  answer_over="the prompts of each category of this topic", answer_slices=True)
        written.append({"title": topic.title, "href": path})
        listing.append({"topic": {"text": topic.title, "href": path},
                        "categories": "; ".join(f"{c} ({', '.join(topic.categories[c]['families'])}): "
                                                f"{topic.categories[c]['reason']}" for c in categories)})
    mapped = {c for t in topics for c in t.categories}
    left = [{"category": {"text": slice_name("category", c), "href": slice_path("category", c)},
             "why": unmapped.get(c, "not in the taxonomy yet: add it to site/" + TOPICS_FILE)}
            for c in present if c not in mapped]
    columns = [Column("topic", "Topic", "link"), Column("categories", "Categories it gathers (families): why", "text")]
    site.page("topics.html", "topics.html", "Topics",
              table=site.table("topics.html", "topics", columns, listing),
              left=site.table("topics.html", "not-in-a-topic", [Column("category", "Category", "link"),
                                                                 Column("why", "Why it is in no topic", "text")], left)
              if left else None)
    return {"topics": written, "by_category": {c: {"title": w["title"], "href": w["href"]} for w, topic in
                                              zip(written, [t for t in topics if any(c in present for c in t.categories)])
                                              for c in topic.categories if c in present}}
