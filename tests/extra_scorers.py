"""Test plugin: a second scorer with the same metric names as ground_truth (max |a| over channels).

Imported with ``--plugin extra_scorers`` (``tests/`` on ``PYTHONPATH``) to check that a store
holding two scorers keeps them apart in the leaderboard and the report.
"""

from synthbench.scoring import GroundTruthScorer, register_scorer

register_scorer(GroundTruthScorer(name="ground_truth_max", channel_aggregation="max_abs"))
