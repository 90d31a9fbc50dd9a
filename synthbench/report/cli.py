"""Command line of the report: ``python -m synthbench.report --store PATH --out DIR``.

Bad input (a missing store, a file that is not a synthbench database, an empty one, an output
folder that cannot be written, an unknown metric) is reported on one line with exit code 2, and
nothing is left half-written in the output folder.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from synthbench.runner.cells import import_plugins
from synthbench.scoring import metrics
from synthbench.run import DEFAULT_STORE, OneLineParser, UsageError, parse_names

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m synthbench.report",
                description="Write a report (Markdown, self-contained HTML, PNG figures) of a synthbench results database.")
    p.add_argument("--store", type=Path, default=DEFAULT_STORE, help="results database (default: %(default)s)")
    p.add_argument("--out", type=Path, default=Path("results") / "report",
                   help="output folder, created if needed (default: %(default)s)")
    p.add_argument("--suite", help="report only the cells of this suite")
    p.add_argument("--metrics", default="best_k,best_2k",
                   help="comma-separated global metrics; the first drives curves, cost and statistics "
                        "(default: %(default)s)")
    p.add_argument("--level", type=float, default=0.9,
                   help="mean best_k a method must keep up to its breakpoint (default: %(default)s)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the rank tests (default: %(default)s)")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (the scorers, datasets or methods the store's cells came from); repeatable")
    return p


def main(argv: list[str] | None = None) -> int:
    from synthbench.report import ReportError, build_report, load_results, write_report

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        args = build_parser().parse_args(argv)
        try:
            import_plugins(args.plugin)
        except ImportError as exc:
            raise UsageError(f"--plugin: {exc}") from None
        chosen = parse_names(args.metrics, metrics.names("global"), "metrics")
        if not 0 < args.alpha < 1:
            raise UsageError(f"--alpha must be within (0, 1), got {args.alpha}")
        results = load_results(args.store, suite=args.suite)
        report = build_report(results, metrics=chosen, level=args.level, alpha=args.alpha)
        written = write_report(report, args.out)
    except (UsageError, ReportError) as exc:
        print(f"synthbench.report: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"synthbench.report: error: cannot write the report to {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {', '.join(p.name for p in written)} to {args.out}")
    return 0
