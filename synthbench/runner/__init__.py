"""Running a grid: cells, the SQLite results store, execution and the leaderboard.

Its names are imported when first used (PEP 562), so reading a store (:mod:`synthbench.runner.store`,
what the report needs) imports neither torch nor the registries that running a grid needs. The function
that runs a grid is :func:`synthbench.runner.execute.execute` (its module bears its name, so it is not
one of the package's names).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from synthbench.runner.execute import RunSummary
    from synthbench.runner.grid import Cell, FoldTask, GridSpec
    from synthbench.runner.store import ResultStore, StoreError

#: Each public name and the module that defines it.
_HOMES = {
    "Cell": "grid",
    "FoldTask": "grid",
    "GridSpec": "grid",
    "ResultStore": "store",
    "StoreError": "store",
    "RunSummary": "execute",
}

__all__ = ["Cell", "FoldTask", "GridSpec", "ResultStore", "StoreError", "RunSummary"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
