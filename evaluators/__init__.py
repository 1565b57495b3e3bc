"""The evaluator: scores submitted image folders (submission I/O, scorers, metrics, aggregation).

Not built yet: see the evaluator and submissions issues.
"""
