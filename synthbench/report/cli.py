"""Command line of the report: ``python -m synthbench.report --store PATH --out DIR``.

Bad input (a missing store, a file that is not a synthbench database, an empty one, an output
folder that cannot be written, an unknown metric) is reported on one line with exit code 2, and
nothing is left half-written in the output folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from synthbench.cli import (
    DEFAULT_STORE,
    OneLineParser,
    UsageError,
    add_common_options,
    add_competence_options,
    add_data_dir_option,
    competence_threshold,
    data_dir,
    load_plugins,
    parse_names,
    print_error,
    setup_logging,
)

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="python -m synthbench.report",
        description="Write a report (Markdown, self-contained HTML, PNG figures) of a synthbench results database.",
    )
    p.add_argument("--store", type=Path, default=DEFAULT_STORE, help="results database (default: %(default)s)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("results") / "report",
        help="output folder, created if needed (default: %(default)s)",
    )
    p.add_argument("--suite", help="report only the cells of this suite")
    p.add_argument(
        "--metrics",
        default="best_k,best_2k",
        help="comma-separated global metrics; the first drives curves, cost and statistics (default: %(default)s)",
    )
    p.add_argument(
        "--level",
        type=float,
        default=0.9,
        help="mean best_k a method must keep up to its breakpoint (default: %(default)s)",
    )
    p.add_argument(
        "--alpha", type=float, default=0.05, help="significance level of the rank tests (default: %(default)s)"
    )
    add_data_dir_option(p, "to draw their example images again")
    add_competence_options(p)
    add_common_options(p, "import a plugin first (the scorers, datasets or methods the store's cells came from)")
    return p


def main(argv: list[str] | None = None) -> int:
    from synthbench.report import ReportError, build_report, load_results, write_report

    setup_logging()
    try:
        args = build_parser().parse_args(argv)
        setup_logging(args.debug)
        load_plugins(args.plugin)
        if not 0 < args.alpha < 1:
            raise UsageError(f"--alpha must be within (0, 1), got {args.alpha}")
        threshold = competence_threshold(args)
        results = load_results(
            args.store, suite=args.suite, data_dir=data_dir(args), competence=threshold, all_models=args.all_models
        )
        declared = results.catalogue.scorers.values()  # the global truth metrics, as the store records them
        chosen = parse_names(
            args.metrics,
            list(dict.fromkeys(m for s in declared for m, info in s.metrics.items() if info.scope == "global")),
            "metrics",
        )
        report = build_report(results, metrics=chosen, level=args.level, alpha=args.alpha)
        written = write_report(report, args.out)
    except (UsageError, ReportError) as exc:
        return print_error("synthbench.report", exc)
    except OSError as exc:
        return print_error("synthbench.report", f"cannot write the report to {args.out}: {exc.strerror or exc}")
    print(f"wrote {', '.join(p.name for p in written)} to {args.out}")
    return 0
