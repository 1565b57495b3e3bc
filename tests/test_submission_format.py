"""evaluators/submission/format.py: a metadata.jsonl line is read as strict JSON, refused in json.loads's own words."""

from __future__ import annotations

import json

import pytest

from cultureboard.evaluators.submission.format import DuplicateKeyError, NotFiniteError, parse_metadata_line


@pytest.mark.parametrize("raw", [b"\xef\xbb\xbf{}", b"[1,", b'{"a" 1}', b"", b"  "])
def test_a_line_that_is_not_json_is_refused_as_json_loads_refuses_it(raw):
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(raw.decode("utf-8"))
    with pytest.raises(json.JSONDecodeError) as got:
        parse_metadata_line(raw)
    assert (got.value.msg, got.value.pos) == (expected.value.msg, expected.value.pos)


@pytest.mark.parametrize("raw, error", [(b'{"a": 1, "a": 2}', DuplicateKeyError), (b'{"a": NaN}', NotFiniteError),
                                        (b'{"a": -Infinity}', NotFiniteError), (b'{"a": 1e999}', NotFiniteError),
                                        (b'{"a": "\xff"}', UnicodeDecodeError)])
def test_what_json_loads_lets_through_is_refused(raw, error):
    with pytest.raises(error):
        parse_metadata_line(raw)


def test_a_line_is_its_json_value():
    raw = b'{"file_name": "images/a.png", "sample_idx": 0, "x": [1.5, {"y": null}], "u": "\\u2028"}'
    assert parse_metadata_line(raw) == json.loads(raw)
    assert parse_metadata_line(b'{"b": 2, "a": {"b": 3}}') == {"b": 2, "a": {"b": 3}}  # nothing kept between lines
