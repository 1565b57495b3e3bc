"""Stage 2, the scoring engine: ``evaluate`` (and ``merge_shards``), the family registry, the scorers of
three kinds (embedding, pairwise, judge) and the one on-disk cache they share."""
