"""The README's hostile-input table is true: each corpus row's counts are those of its test module's cases, and
each fault-test row's count is the number of tests its module holds."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import test_hostile_builder
import test_hostile_evaluate
import test_hostile_faults
import test_hostile_ratings
import test_hostile_references
import test_hostile_submissions

ROOT = Path(__file__).resolve().parent.parent


def docstring_counts(module) -> tuple[int, int, int]:
    """(cases, rejected, accepted) as the module's docstring states them."""
    return tuple(int(re.search(pattern, module.__doc__)[1])
                 for pattern in (r"(\d+)\s+(?:CLI\s+)?cases", r"(\d+)\s+rejected\s+cleanly", r"(\d+)\s+accepted\s+by\s+design"))


def readme_rows() -> dict[str, list[str]]:
    """The hostile-input table: {first word of the corpus cell: the other cells}."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("**Hostile input**"):].split("\n\n")[1]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    return {row[0].split(":")[0]: row[1:] for row in rows}


def collected(test_file: str) -> int:
    """How many tests pytest collects from ``tests/<test_file>``."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          f"tests/{test_file}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return sum(line.startswith(f"tests/{test_file}::") for line in out.splitlines())


def test_the_evaluate_corpus_count():
    """test_hostile_evaluate's docstring (its corpus has no count test of its own)."""
    cases = (len(test_hostile_evaluate.MERGE_SHARDS) + len(test_hostile_evaluate.BAD_IDS) + len(test_hostile_evaluate.COMPARE)
             + len(test_hostile_evaluate.SHARD_ROWS) + len(test_hostile_evaluate.OUT_OF_RANGE)
             + len(test_hostile_evaluate.UNWRITABLE) + 3)  # + the Hub images, the dripping Hub, the failing worker
    assert docstring_counts(test_hostile_evaluate) == (cases, cases, 0)


def test_the_references_corpus_count():
    """test_hostile_references's docstring: its lists, plus a repeating continuation, two drips and a rename cycle
    rejected, two odd answers accepted."""
    rejected = len(test_hostile_references.NOT_FREE) + len(test_hostile_references.WRONG_SHAPES) + 4
    accepted = len(test_hostile_references.FREE) + 2
    assert docstring_counts(test_hostile_references) == (rejected + accepted, rejected, accepted)


def test_the_ratings_corpus_count():
    cases = (len(test_hostile_ratings.RATINGS) + len(test_hostile_ratings.UNKNOWN_IDS)
             + len(test_hostile_ratings.UNSHARED_SCORES))
    assert docstring_counts(test_hostile_ratings) == (cases, cases, 0)


def test_the_faults_corpus_count():
    """test_hostile_faults's docstring: its lists, plus the SPARQL run deadline, the LLM build deadline and the hung
    decompressor."""
    cases = len(test_hostile_faults.OS_ERRORS) + len(test_hostile_faults.DRIPS) + 3
    assert docstring_counts(test_hostile_faults) == (cases, cases, 0)


def test_the_readme_table_matches_the_tests():
    rows = readme_rows()
    for word, module in (("builder", test_hostile_builder), ("submissions", test_hostile_submissions),
                         ("scoring", test_hostile_evaluate),
                         ("references", test_hostile_references), ("ratings", test_hostile_ratings),
                         ("faults", test_hostile_faults)):
        cases, rejected, accepted = docstring_counts(module)
        assert [int(re.match(r"\d+", cell)[0]) for cell in rows[word][:3]] == [cases, rejected, accepted], word
    for word, test_file in (("outputs", "test_outputs.py"), ("cache", "test_cache.py")):
        assert rows[word][0].startswith(f"{collected(test_file)} tests"), word
    inputs = sum(docstring_counts(m)[0] for m in (test_hostile_builder, test_hostile_submissions, test_hostile_evaluate,
                                                  test_hostile_references, test_hostile_ratings, test_hostile_faults))
    faults = collected("test_outputs.py") + collected("test_cache.py")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(rf"\b{inputs}\s+hostile\s+inputs\s+and\s+{faults}\s+fault\s+tests", readme)
