"""Read a small hand-written YAML file (a curation file, a build config) safely.

``yaml.safe_load`` refuses Python tags, but it still expands aliases: a few hundred bytes of nested
aliases (a "billion laughs" file) become gigabytes once the result is walked, and deep nesting ends
in a RecursionError, and a key given twice in one mapping silently keeps the last value. So the file's
events are scanned first, without building anything: an alias (``*name``), nesting deeper than
``MAX_DEPTH`` or a repeated key is rejected with its line, as ``submission.yaml`` is by the submission
validator. Only then is the file loaded.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from cultureboard.errors import CultureboardError

#: The deepest nesting of mappings and sequences accepted (the builder's files use three levels).
MAX_DEPTH = 16


def load_yaml(path: str | Path, what: str, fix: str):
    """The data of the YAML file ``path`` (``what`` it should be, and how to write it: ``fix``, for
    the messages); a ``CultureboardError`` when it cannot be read, is not YAML, uses aliases, nests
    deeper than ``MAX_DEPTH`` or repeats a key of a mapping."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CultureboardError(path, f"cannot be read as {what} ({exc.__class__.__name__})", fix) from None
    try:
        open_: list[dict | None] = []  # per open mapping: {key: line} and whether a key comes next; None: a list
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent):
                raise CultureboardError(f"{path}:{line}", "uses a YAML alias (*name)",
                                        "write every value out in full: aliases are not accepted")
            mapping = open_[-1] if open_ else None
            if mapping is not None and isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent,
                                                          yaml.SequenceStartEvent)):
                if mapping["key next"] and isinstance(event, yaml.ScalarEvent):
                    if event.value in mapping["keys"]:
                        raise CultureboardError(f"{path}:{line}", f"repeats the key {event.value!r} of line "
                                                f"{mapping['keys'][event.value]} (YAML keeps only the last)",
                                                "give each key once in its mapping")
                    mapping["keys"][event.value] = line
                mapping["key next"] = not mapping["key next"]
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                open_.append({"keys": {}, "key next": True} if isinstance(event, yaml.MappingStartEvent) else None)
                if len(open_) > MAX_DEPTH:
                    raise CultureboardError(f"{path}:{line}", f"nests more than {MAX_DEPTH} levels deep", fix)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                open_.pop()
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        detail = getattr(exc, "problem", None) or exc.__class__.__name__
        raise CultureboardError(where, f"cannot be read as {what} (not valid YAML: {detail})", fix) from None
