"""Running a grid: cells, the SQLite results store, execution and the leaderboard."""

from synthbench.runner.execute import RunSummary, execute
from synthbench.runner.grid import Cell, FoldTask, GridSpec
from synthbench.runner.store import ResultStore, StoreError

__all__ = ["Cell", "FoldTask", "GridSpec", "ResultStore", "StoreError", "execute", "RunSummary"]
