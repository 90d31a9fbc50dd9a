"""The verdicts study page: which verdict to trust, from one frozen suite's store.

``python -m synthbench.report.study --store STORE --suite verdicts_quick --out docs/verdicts/study.md`` writes the
page (Markdown) and its two figures beside it: the suite's identity (name, version, hash), the synthbench version,
the machine and the wall time its runs took, then :func:`~synthbench.report.study.section.trust_lines` (validity,
reliability, meta-consistency, paired tests, agreement per setting) and how each verdict's controls fare. The page
holds nothing but what the store says: the same store writes the same page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synthbench.report.parts import headline, store_parts
from synthbench.report.results import Results
from synthbench.report.study.section import trust_lines
from synthbench.report.study.verdicts import verdict_validity
from synthbench.report.summary import duration, used_runs, wall_seconds
from synthbench.report.tables import data_word
from synthbench.runner.judged import control_verdict

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["study_page", "main"]


def _suite_size(suite: str) -> str:
    """`` of the suite's N`` for a shipped suite (so a partial run shows as one), else nothing."""
    from synthbench.suites import load_suite, suite_names

    return f" of the suite's {len(load_suite(suite).cells())}" if suite in suite_names() else ""


def _provenance(results: Results, suite: str) -> list[str]:
    cells = results.cells
    status = cells["status"].value_counts()
    runs = used_runs(results)
    machines = sorted({_machine(m) for m in runs["machine"].dropna()}) if not runs.empty else []
    hashes = sorted(cells["suite_hash"].dropna().unique())
    rows = [
        ("suite", f"`{suite}` (hash {', '.join(f'`{h}`' for h in hashes) or 'not recorded'})"),
        (
            "cells",
            f"{len(cells)}{_suite_size(suite)}: {status.get('ok', 0)} finished, {status.get('skipped', 0)} "
            f"skipped with their reason, {status.get('failed', 0)} failed",
        ),
        ("synthbench", ", ".join(sorted(cells["package_version"].dropna().unique()))),
        ("machine", "; ".join(machines) or "not recorded"),
        ("wall time", f"{duration(wall_seconds(runs))} over {len(runs)} run(s)" if len(runs) else "not recorded"),
        ("command", "; ".join(f"`{c}`" for c in runs["command"].dropna().unique()) if len(runs) else "not recorded"),
    ]
    return ["| | |", "|:--|:--|", *(f"| {k} | {v} |" for k, v in rows), ""]


def _machine(text: str) -> str:
    m: dict[str, Any] = json.loads(text)
    gpus = ", ".join(m.get("gpus") or []) or "no GPU"
    memory = f"{m['memory_bytes'] / 2**30:.0f} GiB" if m.get("memory_bytes") else "memory not recorded"
    return f"{m.get('cores', '?')} cores ({m.get('cpu', '?')}), {memory}, {gpus}, torch {m.get('torch', '?')}"


def _controls(results: Results) -> list[str]:
    """For each verdict, whether its controls do as well as the methods (a random map passing a verdict is its
    failure)."""
    lines = []
    for part in store_parts(results):
        if part.is_truth or part.judges_verdict:
            continue
        metric = headline(part, ())
        if metric is None:
            continue
        sentence = control_verdict(part.results.scores, metric, part.results.catalogue)
        kind = data_word(part.kind)
        lines.append(f"- {part.scorer} on {kind}: {sentence or 'no control measured beside its methods.'}")
    if not lines:
        return []
    return [
        "## The controls",
        "",
        "Which verdicts a random map passes (a control doing as well as a method):",
        "",
        *lines,
        "",
    ]


def study_page(results: Results, suite: str) -> tuple[str, dict[str, Figure]]:
    """The page's Markdown and its figures (file name -> figure) for the cells of ``suite`` in ``results``."""
    found: dict[str, Figure] = {}

    def figure(enabled: bool, name: str, alt: str, draw: Any) -> list[str]:
        if not enabled:
            return []
        found[name] = draw()
        return [f"![{alt}]({name})", ""]

    validity = verdict_validity(store_parts(results))
    body = trust_lines(validity, figure, prefix="study") or ["The store holds no verdict beside the ground truth.", ""]
    md = [
        "# Which verdict to trust: the study",
        "",
        f"Every verdict the field uses, set beside the known ground truth on the cells of the frozen suite `{suite}`: "
        "how well each orders the methods as the truth does (validity), how consistently it orders them without the "
        "truth (reliability), and whether the second predicts the first. Regenerate this page with "
        f"`python -m synthbench.run --suite {suite} --store STORE` and "
        f"`python -m synthbench.report.study --store STORE --suite {suite} --out docs/verdicts/study.md`.",
        "",
        *_provenance(results, suite),
        "## What it found",
        "",
        *body,
        *_controls(results),
    ]
    return "\n".join(md), found


def main(argv: list[str] | None = None) -> int:
    from synthbench.cli import OneLineParser, UsageError, print_error, setup_logging
    from synthbench.report import ReportError, load_results

    setup_logging()
    p = OneLineParser(prog="python -m synthbench.report.study", description=__doc__.splitlines()[0])
    p.add_argument("--store", type=Path, required=True, help="the suite's results database")
    p.add_argument("--suite", required=True, help="the suite whose cells the page reports (by name)")
    p.add_argument("--out", type=Path, required=True, help="the page to write (.md); its figures go beside it")
    try:
        args = p.parse_args(argv)
        if args.out.suffix != ".md":
            raise UsageError(f"--out must name a Markdown file (.md), got {args.out}")
        results = load_results(args.store, suite=args.suite, all_models=True)
        text, figures = study_page(results, args.suite)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        for name, fig in figures.items():
            fig.savefig(args.out.parent / name, dpi=150, bbox_inches="tight", metadata={"Software": None})
        args.out.write_text(text + "\n", encoding="utf-8")
    except (UsageError, ReportError) as exc:
        return print_error("synthbench.report.study", exc)
    except OSError as exc:
        return print_error("synthbench.report.study", f"cannot write {args.out}: {exc.strerror or exc}")
    print(f"wrote {args.out} and {', '.join(sorted(figures)) or 'no figure'}")
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
