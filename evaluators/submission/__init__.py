"""Stage 1, the submission contract and its tools: the format (``format``), ``validate``, ``package`` for
images made elsewhere, and ``generate`` with any diffusers pipeline."""
