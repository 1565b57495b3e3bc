"""Validate a submission folder before it is merged (``cultureboard validate``): every problem at once,
each naming the file (``metadata.jsonl:12``, ``images/x.png``), the problem and the fix.

The rules are grouped by what they check, one module each under :mod:`.rules` (their docstrings list them):
:mod:`~.rules.paths` (the folder and what is in it, file names, text safety), :mod:`~.rules.spec`
(``submission.yaml``, read once into the typed :class:`~.rules.spec.Spec`, and the model's other submissions),
:mod:`~.rules.rows` (one row per model version and prompt set: ``supersedes``),
:mod:`~.rules.metadata`, :mod:`~.rules.coverage` (needs the dataset), :mod:`~.rules.images`, :mod:`~.rules.copies`
(perceptual hashes: copies of reference photographs, near-copies across prompts) and :mod:`~.rules.scope` (a pull request's changed files). :data:`GROUPS` runs them in order, each reading what the
earlier ones found from the :class:`~.rules.report.Run`: a new rule group is one module with its ``CODES`` and a
``check(run)`` function, added to :data:`GROUPS` and :data:`CODES`. ``package`` runs the same rules on the folder
it is about to write (:func:`validate` with ``name``), so it never writes one that validate rejects.

:data:`CODES` lists the problem codes; they are stable (CI, PR comments and tests key on them). Validation never
writes anything and never raises on a bad submission; a bad ``--dataset`` or a missing submission folder is a
usage error (:class:`CultureboardError` with exit code 2). A report keeps the first ``max_problems`` problems and
counts the rest by code (:attr:`Report.omitted`), so a huge broken file gives a short report in bounded memory.
Without a dataset, coverage is not checked: the report says so (:attr:`Report.unchecked`) and is never "valid".
"""

from __future__ import annotations

import warnings
from pathlib import Path

from PIL import Image

from cultureboard.errors import CultureboardError

from .rules import copies, coverage, images, metadata, paths, rows, scope, spec
from .rules.report import DATED_CODES, Limits, Problem, Report, Run, problem
from .rules.scope import check_pr_scope

__all__ = ["CODES", "DATED_CODES", "GROUPS", "Limits", "Problem", "Report", "check_pr_scope", "validate"]

#: Every problem code, by rule group.
CODES: dict[str, str] = {**paths.CODES, **spec.CODES, **rows.CODES, **metadata.CODES, **coverage.CODES, **images.CODES,
                        **copies.CODES, **scope.CODES}

#: The rule groups in the order they run (each a function of the Run; a later one reads what earlier ones found).
GROUPS = (paths.check_tree, spec.check, spec.check_siblings, rows.check, metadata.check, coverage.check, images.check,
          images.check_copies, copies.check, paths.check_contents)


def validate(submission_dir: str | Path, dataset: str | Path | None = None, limits: Limits = Limits(), *,
             full_decode: bool = False, workers: int | None = None, name: str | None = None) -> Report:
    """Every problem of the submission folder ``submission_dir``; coverage needs ``dataset`` (a dataset folder).

    ``full_decode`` decodes every pixel as well (see :mod:`.rules.images`); ``workers`` threads read, hash and
    check images (default: the CPU count, at most 8); ``name``: the folder's name, when it is validated before it
    gets it (``package`` checks its work folder). Nothing is written.
    """
    root = Path(submission_dir)
    if root.is_symlink():
        return Report(root.name, [problem("error", "safety.symlink", root.name, "the submission folder is a symbolic link",
                                          "replace it with a real folder")], {})
    if not root.is_dir():
        raise CultureboardError(root, "is not a folder", "pass a submission folder, e.g. submissions/ORG__MODEL", exit_code=2)
    if dataset is not None and not (Path(dataset) / "data").is_dir():
        raise CultureboardError(dataset, "is not a cultureboard dataset folder (no data/ folder)",
                                "pass the --out folder of `cultureboard build`, or a download of the Hub dataset", exit_code=2)
    run = Run(root, limits, Path(dataset) if dataset is not None else None, name, full_decode, workers)
    with warnings.catch_warnings():
        # the pixel limits are checked from the header before the image library sees a file; limits raised
        # above the library's own warning threshold are still checked, and reported, so its warning is noise
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        for group in GROUPS:
            group(run)
    return run.report(run.name)
