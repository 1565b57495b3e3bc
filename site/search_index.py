"""The site's search index: every model, submission, country (and other slice), metric, artifact and prompt page as
``{label, kind, href}``, shipped with the site as ``search-index.js`` (static/search.js reads it; nothing is
requested from elsewhere).

The index is a script that sets a global rather than a JSON file, because a page opened from ``file://`` may not
``fetch()`` a sibling file. ``href`` is relative to the site root; an entry is listed only when its page was
written, so the index never links to a missing page. An artifact has no page of its own: its entry opens the
first prompt page (by prompt set, then prompt id) that names it.
"""

from __future__ import annotations

import json

from .board import Board
from .gallery import prompt_page
from .models import model_page, models_of
from .names import display_name, slice_name, slice_path, type_label

#: The file every page loads, at the site root.
INDEX = "search-index.js"
#: The global it sets.
GLOBAL = "cultureboardSearch"


def search_entries(board: Board, pages) -> list[dict]:
    """``{label, kind, href}`` for each written page in ``pages`` (site-root paths) that a reader may look for."""
    entries = [{"label": display_name({**rs[0].spec, "tag": None}, key), "kind": "model", "href": model_page(key)}
               for key, rs in models_of(board).items()]
    entries += [{"label": submission_label(r), "kind": "submission", "href": f"model/{r.sid}.html"}
                for r in sorted(board.results.values(), key=lambda r: (r.prompt_set, r.sid))]
    entries += [{"label": slice_name(st, s), "kind": type_label(st).lower(), "href": slice_path(st, s)}
                for st, s in board.slices()]
    entries += [{"label": f"{card['title']} ({name})", "kind": "metric", "href": f"metric/{name}.html"}
                for name, card in sorted(board.cards.items())]
    artifacts, prompts = {}, []
    for prompt_id, p in sorted(board.prompts.items(), key=lambda item: (item[1].get("prompt_set") or "", item[0])):
        href = prompt_page(p.get("prompt_set") or "", prompt_id)
        if href not in pages:
            continue
        prompts.append({"label": p.get("text") or prompt_id, "kind": f"prompt ({p['prompt_set']})", "href": href})
        if p.get("artifact_name"):
            country = p.get("country_name") or p.get("country")
            artifacts.setdefault(p["artifact_name"] + (f" ({country})" if country else ""), href)
    entries += [{"label": label, "kind": "artifact", "href": href} for label, href in sorted(artifacts.items())]
    entries += prompts
    return [e for e in entries if e["href"] in pages]


def submission_label(r) -> str:
    """A submission's display name and its prompt set, the prompt set once: a tag that already names it ("tiny-a
    (cube-awareness)") is not followed by it again."""
    return r.display if r.display.endswith(f"({r.prompt_set})") else f"{r.display} ({r.prompt_set})"


def safe_json(value) -> str:
    """``value`` as JSON for a script: every non-ASCII character and ``< > &`` escaped, so no label can end a
    script, open a tag or break a line."""
    data = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def search_script(entries: list[dict]) -> str:
    """The index as a script: ``window.<GLOBAL> = [...]`` (:func:`safe_json`)."""
    return f"window.{GLOBAL} = {safe_json(entries)};\n"


def write_search_index(site, board: Board) -> None:
    """Write ``search-index.js`` at the root of ``site`` from the pages written so far (call it last)."""
    site.write(INDEX, search_script(search_entries(board, set(site.sizes))))
