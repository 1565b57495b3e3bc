"""The static leaderboard site: Jinja templates rendered from results, the dataset and submissions.

Public API: :func:`cultureboard.site.render.build_site` (``cultureboard build site``).
"""
