"""Events -> flows -> scoreboard state: flows and their levels (flows.py, _levels.c), the scoreboard
per sender direction (scoreboard.py over the core's Board, _scoreboard.c), and the chunked pass
that drives them and releases ended flows (pipeline.py)."""
