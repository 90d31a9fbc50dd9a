"""Reports of a results database: leaderboards with confidence intervals, decoy curves, breakpoints,
cost against quality, rank statistics, and a self-contained HTML/Markdown report.

``python -m synthbench.report --store PATH --out DIR`` writes the report; in a notebook::

    from synthbench.report import load_results, store_summary, overview_figures, summary_table
    results = load_results("results/synthbench.sqlite")
    store_summary(results)          # what the store says, as Markdown
    overview_figures(results)       # one heatmap per part of the store
    summary_table(results)

Importing it loads neither torch nor a registry: everything it reports on, the store records (what each
dataset, method, scorer, metric and model kind is). matplotlib and scipy are imported when a figure is
drawn or a test computed.
"""

from synthbench.report.document import Report, build_report, overview_figures, write_report
from synthbench.report.results import ReportError, Results, load_results
from synthbench.report.statistics import RankTest, block_means, rank_test
from synthbench.report.summary import store_summary
from synthbench.report.tables import (
    BREAKPOINT_LEVEL,
    breakpoints,
    decoy_table,
    mean_ci,
    model_table,
    pareto_front,
    summary_table,
)
from synthbench.runner.judged import control_verdict

__all__ = [
    "load_results",
    "Results",
    "ReportError",
    "summary_table",
    "decoy_table",
    "model_table",
    "breakpoints",
    "mean_ci",
    "BREAKPOINT_LEVEL",
    "pareto_front",
    "rank_test",
    "RankTest",
    "block_means",
    "build_report",
    "write_report",
    "Report",
    "store_summary",
    "overview_figures",
    "figures",
    "control_verdict",
]


def __getattr__(name: str):
    """``synthbench.report.figures`` on first use: it imports matplotlib, which reading a store does not need."""
    if name == "figures":
        import importlib

        return importlib.import_module("synthbench.report.figures")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
