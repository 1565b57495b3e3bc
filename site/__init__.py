"""The static leaderboard site renderer (Jinja). Not built yet: see the leaderboard site issue."""
