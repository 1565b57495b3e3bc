"""The submission rule set, one module per thing checked: :mod:`.paths` (the folder, file names, text safety),
:mod:`.spec` (submission.yaml, read once into :class:`~.spec.Spec`), :mod:`.metadata`, :mod:`.coverage` (against
the dataset), :mod:`.images`, :mod:`.copies` (perceptual hashes) and
:mod:`.scope` (a pull request's changed files). Each module has its ``CODES`` and
functions of a :class:`~.report.Run`; ``validate`` runs them in order (``GROUPS``) and ``package`` runs the same
rules on what it is about to write."""
