"""cultureboard: benchmarks and a leaderboard for the cultural competence of text-to-image models.

The core package holds what every stage shares: the command line, the record schemas, the country
table, error reporting and atomic file output. The stages live in subpackages:
``cultureboard.builder``, ``cultureboard.evaluators`` and ``cultureboard.site``.
"""

__version__ = "0.1.0"
