"""Stage 3, results: aggregation with bootstrap CIs (``aggregate``, ``stats``), human ratings, publishing and
drift checks."""
