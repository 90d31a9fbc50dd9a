"""The report document: sections in Markdown, figures as PNG, and one self-contained HTML page.

:func:`build_report` turns loaded results into a :class:`Report` in memory (text and figures);
:func:`write_report` writes it to a folder all at once: files are made in a hidden staging
folder inside the target and moved in only when every one of them was written, so a failure
leaves nothing half-written behind.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from synthbench.report import tables
from synthbench.report.page import html_page
from synthbench.report.parts import (
    IMAGE_METRICS,
    Part,
    headline,
    method_anchor,
    method_link,
    scored_metrics,
    store_parts,
    truth_of,
)
from synthbench.report.results import Results
from synthbench.report.statistics import rank_test
from synthbench.report.study.section import ci_text, trust_lines
from synthbench.report.study.verdicts import VerdictValidity, verdict_validity
from synthbench.report.summary import duration, summary_lines, used_runs, wall_seconds
from synthbench.runner.judged import control_verdict

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn, so reading a store does not load it
    from matplotlib.figure import Figure

__all__ = ["Report", "build_report", "write_report", "overview_figure", "overview_figures"]


@dataclass
class Report:
    """A report in memory: Markdown text referring to figures by file name, and the figures."""

    markdown: str
    figures: dict[str, Figure] = field(default_factory=dict)

    def html(self, images: dict[str, bytes]) -> str:
        """The whole report as one HTML page (:func:`~synthbench.report.page.html_page`), each figure embedded from
        its PNG bytes (``images`` by file name)."""
        return html_page(self.markdown, images)


def _leaderboard_markdown(table: pd.DataFrame, metrics: tuple[str, ...]) -> str:
    """A summary table as Markdown: CI columns merged, chance beside the first metric, counts last."""
    out = pd.DataFrame(index=[method_link(m) + (" †" if table.at[m, "incompetent"] else "") for m in table.index])
    for metric in metrics:
        out[f"{metric} [95 % CI]"] = [ci_text(*r) for r in table[[metric, f"{metric}_lo", f"{metric}_hi"]].to_numpy()]
        out[f"{metric} chance"] = table[f"{metric}_chance"].map(lambda v: "–" if pd.isna(v) else f"{v:.3f}").to_numpy()
    out["method s / cell"] = table["seconds"].map(_seconds).to_numpy()
    if (table["model_seconds"].fillna(0) > 0).any():
        out["+ model training s"] = table["model_seconds"].map(lambda v: _seconds(v) if v else "–").to_numpy()
    for col, name in (
        ("cells", "cells"),
        ("incompetent", "incompetent"),
        ("failed", "failed"),
        ("skipped", "over limit"),
        ("missing", "missing"),
    ):
        out[name] = table[col].to_numpy()
    out.index.name = "method"
    return out.to_markdown(disable_numparse=True)


def _competence_rule(results: Results) -> str:
    """The sentence that states the competence threshold and what became of the cells below it."""
    rule = (
        f"A model's competence is (accuracy − chance) / (ceiling − chance) on its held-out rows; below "
        f"{results.competence_threshold:g} it did not learn, and an explanation of it says nothing of the method."
    )
    if results.all_models:
        return rule + " Such cells are averaged in here, and † marks methods some of whose cells explain one."
    return rule + (
        " Such cells are left out of every mean here (`incompetent` counts them in the tables, "
        "† marks the methods that had some); `--all-models` shows them."
    )


def _per_fit(models: pd.DataFrame, column: str) -> float:
    """The mean of ``column`` over the fits of these :func:`~synthbench.report.tables.model_table` rows (each row
    weighs its number of fits)."""
    return float((models[column] * models["models"]).sum() / models["models"].sum())


def _seconds(value: float) -> str:
    return "–" if pd.isna(value) else f"{value:.3g}"


def _anchor(name: str) -> str:
    """An empty block with id ``name`` before the table it names: where the summary's links land."""
    return f'<div id="{name}"></div>'


def _breakpoint_markdown(points: pd.DataFrame, order: list[str], settings: list[str]) -> str:
    def label(r: pd.Series) -> str:
        if np.isnan(r["breakpoint"]):
            return f"< {r['smallest']}"
        return f"≥ {int(r['breakpoint'])}" if r["held_throughout"] else str(int(r["breakpoint"]))

    cells = points.assign(label=points.apply(label, axis=1)).pivot(index="method", columns="setting", values="label")
    cells = cells.reindex(index=order, columns=settings).astype(object).fillna("missing")
    return cells.to_markdown(disable_numparse=True)


def _models_markdown(models: pd.DataFrame) -> list[str]:
    """The models section: held-out AUROC per model and setting (a column per decoy count), then who explains each."""
    if models.empty:
        return ["No cell of this store explains a trained model (every method works on the data alone).", ""]
    decoys = sorted(models["n_decoys"].unique())
    rows = {}
    for (kind, setting), g in models.groupby(["model", "setting"], sort=False):
        by = g.set_index("n_decoys")
        row = {
            f"{d} decoys": ci_text(*by.loc[d, ["auroc", "auroc_lo", "auroc_hi"]]) if d in by.index else "missing"
            for d in decoys
        }
        row["accuracy"] = f"{_per_fit(g, 'accuracy'):.3f}"
        row["training s / fit"] = _seconds(_per_fit(g, "train_seconds"))
        row["competence"] = "–" if g["competence"].isna().all() else f"{_per_fit(g, 'competence'):.2f}"
        row["ceiling"] = "–" if g["ceiling"].isna().all() else f"{_per_fit(g, 'ceiling'):.3f}"
        row["Bayes accuracy"] = "–" if g["bayes"].isna().all() else f"{_per_fit(g, 'bayes'):.3f}"
        row["incompetent"] = f"{g['incompetent'].sum()} / {g['models'].sum()}"
        rows[f"{kind} · {setting}"] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "model · dataset"
    lines = [table.to_markdown(disable_numparse=True), ""]
    for kind, g in models.groupby("model", sort=False):
        users = sorted({m for ms in g["methods"] for m in ms})
        lines.append(f"- `{kind}` is explained by {len(users)} method(s): {', '.join(users)}.")
    return [*lines, ""]


def _provenance(results: Results) -> list[str]:
    cells, runs = results.cells, results.runs
    lines = [
        f"- store: `{results.path}`",
        f"- synthbench version(s) of the cells: {', '.join(sorted(cells['package_version'].unique()))}",
    ]
    if not results.datasets.empty:
        lines.append(_datasets_line(results))
    suites = cells.dropna(subset=["suite"])[["suite", "suite_hash"]].drop_duplicates()
    lines.append(
        "- suite: " + (", ".join(f"{s} (hash `{h}`)" for s, h in suites.to_numpy()) or "none (a grid from flags)")
    )
    lines.append(
        f"- seeds: {', '.join(map(str, sorted(cells['seed'].unique())))}; folds: "
        f"{', '.join(map(str, sorted(cells['n_folds'].unique())))}; samples: "
        f"{', '.join(map(str, sorted(cells['n_samples'].unique())))}"
    )
    versions = cells["versions"].dropna()
    if not versions.empty:
        libs = json.loads(versions.iloc[-1])
        lines.append("- libraries (latest cell): " + ", ".join(f"{k} {v}" for k, v in sorted(libs.items())))
    lines.append(f"- cells stored from {cells['finished_at'].min()} to {cells['finished_at'].max()} (UTC)")
    fits = tables.model_fits(results)
    cell_seconds = (
        f"the methods' own seconds summed over the cells {duration(cells['method_seconds'].fillna(0).sum())}"
        + (
            f", training the {len(fits)} shared models {duration(fits['train_seconds'].sum())}"
            if not fits.empty
            else ""
        )
        + f", the scorers {duration(cells['scorer_seconds'].fillna(0).sum())}"
    )
    if runs.empty:
        lines.append(f"- runs: not recorded (store written before synthbench recorded runs); {cell_seconds}")
        return lines
    used = used_runs(results)
    lines.append(
        f"- total wall time: {duration(wall_seconds(used))} over {len(used)} run(s) that wrote these cells; "
        f"{cell_seconds}"
    )
    for r in used.itertuples():
        machine = json.loads(r.machine) if r.machine else {}
        executor = json.loads(r.executor) if r.executor else {}
        memory = f"{machine['memory_bytes'] / 2**30:.0f} GiB" if machine.get("memory_bytes") else "? GiB"
        gpus = ", ".join(machine.get("gpus") or []) or "no GPU"
        lines.append(
            f"  - run {r.run_id} ({r.status}, started {r.started_at}): `{r.command or '(library call)'}` on "
            f"{machine.get('host', '?')}: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, "
            f"{memory}, {gpus}; engine {executor.get('name', '?')}"
        )
    return lines


def _figure(report: Report, enabled: bool, name: str, alt: str, draw) -> list[str]:
    """Add figure ``name`` (drawn by ``draw()``) to ``report`` and return its Markdown, when ``enabled``."""
    if not enabled:
        return []
    report.figures[name] = draw()
    return [f"![{alt}]({name})", ""]


def build_report(
    results: Results,
    *,
    metrics: tuple[str, ...] = ("best_k", "best_2k"),
    level: float = tables.BREAKPOINT_LEVEL,
    alpha: float = 0.05,
) -> Report:
    """The report of ``results``: what the store says, an overview, leaderboards, curves, maps, cost, statistics,
    each verdict beside the truth, the methods' descriptions and the provenance.

    The store is split into parts that may be compared (:func:`~synthbench.report.parts.store_parts`:
    input kind, scorer, explain mode), each with its own sections, so two scorers or explain modes are
    never averaged together. Tables: ``metrics[0]`` drives the summary, overview, curves, cost figure and
    rank test (best_k by default); breakpoints are always on best_k (the largest decoy count with mean
    best_k >= ``level``). Images: the localisation leaderboard and example maps.
    """
    report = Report("")
    md = ["# synthbench report", ""]
    versions = results.cells["package_version"].unique()
    if len(versions) > 1:
        md += [
            f"**Warning:** this store mixes cells of synthbench {', '.join(sorted(versions))}; their numbers may "
            "not be comparable.",
            "",
        ]
    status = results.cells["status"].value_counts()
    missing = len(results.missing())
    parts = store_parts(results)
    validity = verdict_validity(parts)
    md += [
        "## What the store says",
        "",
        *summary_lines(results, parts, metrics=metrics, alpha=alpha, validity=validity),
        f"This report reads `{results.path}`: {len(results.methods)} methods on {len(results.settings)} dataset "
        f"setting(s) ({', '.join(results.settings)}); {status.get('ok', 0)} cells finished, {status.get('failed', 0)} "
        f"failed, {status.get('skipped', 0)} skipped with their reason (a method's declared feature limit, a method "
        f"the scorer cannot judge), {missing} missing from the grid the store implies (shown as missing, never as "
        "zero)."
        + (
            f" It holds {len(parts)} parts that are reported apart and never averaged together: "
            f"{'; '.join(part.label for part in parts)}."
            if len(parts) > 1
            else ""
        ),
        "",
        *_overview(parts, report, metrics),
    ]
    for part in parts:
        if not part.is_truth:
            md += _verdict_sections(part, truth_of(parts, part), report, metrics)
        elif part.kind == "image":
            md += _image_sections(part, report)
        else:
            md += _tabular_sections(part, report, metrics, level, alpha)
    md += _trust_section(validity, report)
    md += _methods_section(results)
    md += [_anchor("provenance"), "", "## Provenance", "", *_provenance(results), ""]
    report.markdown = "\n".join(md)
    return report


def overview_figure(part: Part, metric: str) -> Figure:
    """The overview heatmap of one part (:func:`~synthbench.report.figures.overview_heatmap` of ``metric``, its
    :func:`~synthbench.report.parts.headline`), methods ordered by their mean over every cell."""
    from synthbench.report import figures

    table = tables.overview_table(part.results, metric, part.scorer)
    order = list(tables.summary_table(part.results, metrics=(metric,)).dropna(subset=[metric]).index)
    scores = part.results.scores
    controls = set(scores.loc[scores["control"].fillna(False).astype(bool), "base_method"])
    return figures.overview_heatmap(
        table, metric=part.results.metric(metric, part.scorer), methods=order, controls=controls, title=part.label
    )


def overview_figures(results: Results, *, metrics: tuple[str, ...] = ("best_k", "best_2k")) -> dict[str, Figure]:
    """The report's overview, one heatmap per part of the store (its label, ``""`` for a store of one part)."""
    return {
        part.label: overview_figure(part, metric)
        for part in store_parts(results)
        if (metric := headline(part, metrics)) is not None
    }


def _overview(parts: list[Part], report: Report, metrics: tuple[str, ...]) -> list[str]:
    """One heatmap per part (methods x settings of its headline metric), best methods on top."""
    md = []
    for part in parts:
        metric = headline(part, metrics)
        if metric is None:
            continue
        what = "the ground truth" if part.is_truth else f"the verdict {part.scorer}"
        md += [
            f"**{part.label or 'All settings'}**: mean `{metric}`, {what}.",
            "",
            *_figure(
                report,
                True,
                f"{part.prefix}overview.png",
                f"overview of {metric}",
                lambda p=part, m=metric: overview_figure(p, m),
            ),
        ]
    intro = (
        "Every method (rows, best overall on top) in every setting (columns), coloured by its mean; greyed: no "
        "better than chance (the 95 % interval reaches the chance level written under the column and drawn on the "
        "colour bar)"
        + (
            "; hatched: some folds explain a model below the competence threshold."
            if any(p.results.all_models for p in parts)
            else "."
        )
    )
    return ["## Overview", "", intro, "", *md] if md else []


def _tabular_sections(part: Part, report: Report, metrics: tuple[str, ...], level: float, alpha: float) -> list[str]:
    from synthbench.report import figures

    results, prefix, heading = part.results, part.prefix, part.heading
    metric = metrics[0]
    styles = figures.method_styles(results.methods, results.families)
    overall = tables.summary_table(results, metrics=metrics)
    curves = tables.decoy_table(results, metric)
    points = tables.breakpoints(curves if metric == "best_k" else tables.decoy_table(results, "best_k"), level)
    test = rank_test(results, metric, alpha)
    settings = results.settings
    scorer = results.cells["scorer"].iloc[0]
    m = results.metric(metric, scorer)
    models = tables.model_table(results)
    plots = not curves.empty  # without a finished cell there is nothing to draw
    md = [
        f"**How to read it.** Each method ranks every feature by importance; `{metric}` is the {m.description} "
        f"({m.direction} is better), and the *chance* column gives its expected value under a random ranking. "
        + " ".join(f"`{other}`: the {results.metric(other, scorer).description}." for other in metrics[1:])
        + " Means are over folds and seeds, with 95 % Student-t confidence intervals. "
        + _competence_rule(results),
        "",
        f"## Leaderboard, all datasets{heading}",
        "",
        _anchor(part.anchor("leaderboard")),
        "",
        _leaderboard_markdown(overall, metrics),
        "",
        *_controls_lines(results, metric),
        "Per dataset (click to open):",
        "",
    ]
    for setting in settings:
        md += _collapsed(part, setting, tables.summary_table(results, metrics=metrics, setting=setting), metrics)
    md += [
        _anchor(part.anchor("models")),
        "",
        f"## The models the methods explain{heading}",
        "",
        "Attribution methods explain a model trained once per fold and shared by every method that needs it. Mean "
        "held-out AUROC of that model (95 % CI over folds and seeds; 0.5 is a coin flip), its mean held-out "
        "accuracy, its mean competence against the fold's learnability ceiling (the best held-out accuracy the "
        "forest, the booster and the network of the fold's preset reach on the relevant features alone, shown "
        "beside it with the generator's Bayes accuracy where known; where there are no relevant columns, the Bayes "
        "accuracy), the seconds one training took (once per fold and preset; a model loaded "
        "from the on-disk cache counts its loading), and how many of its fits fell below the competence "
        f"threshold of {results.competence_threshold:g}.",
        "",
        *_models_markdown(models),
    ]
    md += [
        f"## Recovery against the number of decoys{heading}",
        "",
        f"Mean `{metric}` per decoy count, one column of panels per dataset and one row per method family "
        "(classical methods, neural selectors, the attribution methods of each MLP preset), the other families in "
        "grey behind; bands are 95 % confidence intervals, the dashed line is chance.",
        "",
        *_figure(
            report,
            plots,
            f"{prefix}curves.png",
            "decoy curves",
            lambda: figures.decoy_curves(curves, styles, metric=m, settings=settings),
        ),
    ]
    by_n = tables.sample_table(results, metric)
    if not by_n.empty:
        md += [
            f"## Recovery against the number of samples{heading}",
            "",
            f"Mean `{metric}` per sample size for the datasets this store holds at several sizes, one panel per "
            "dataset and decoy count, one row per method family; then the held-out AUROC of the models the "
            "attribution methods explain, against the same sample sizes. The question they answer: how many "
            "samples does a model need before its explanations find the truth.",
            "",
            *_figure(
                report,
                plots,
                f"{prefix}samples.png",
                "recovery against the number of samples",
                lambda: figures.sample_curves(by_n, styles, metric=m),
            ),
            *_figure(
                report,
                plots,
                f"{prefix}model_samples.png",
                "model AUROC against the number of samples",
                lambda: figures.model_sample_curves(models),
            ),
        ]
    order = list(overall.index)
    md += [
        f"## Breakpoints{heading}",
        "",
        f"The largest decoy count up to which a method keeps mean `best_k` ≥ {level} at every measured count: "
        f"`≥ N` means it never fell below {level} (N is the largest count measured), `< N` that it was already "
        "below at the smallest count N.",
        "",
        _breakpoint_markdown(points, order, settings),
        "",
        *_figure(
            report,
            plots,
            f"{prefix}breakpoints.png",
            "breakpoints",
            lambda: figures.breakpoint_figure(points, level=level, methods=order),
        ),
    ]
    front = tables.pareto_front(overall, m)
    md += [
        _anchor(part.anchor("cost")),
        "",
        f"## Cost against quality{heading}",
        "",
        f"Mean `{metric}` over every cell against the method's own mean wall seconds per cell, without training the "
        f"shared model it explains. {_training_sentence(models)}Pareto front, fastest first: "
        f"{', '.join(front.index) or 'none (no finished cell)'}.",
        "",
        *_figure(
            report,
            plots,
            f"{prefix}cost.png",
            "cost against quality",
            lambda: figures.cost_quality(overall, styles, metric=m),
        ),
    ]
    md += [f"## Are the differences real?{heading}", "", test.sentence(), ""]
    if not test.pairwise.empty:
        md += _figure(
            report, plots, f"{prefix}cd.png", "critical-difference diagram", lambda: figures.cd_diagram(test, styles)
        )
    return md


def _training_sentence(models: pd.DataFrame) -> str:
    """What training the shared models cost, per model (the cost figure leaves it out); '' without models."""
    if models.empty:
        return ""
    each = "; ".join(
        f"`{kind}` {_per_fit(g, 'train_seconds'):.3g} s per fit ({g['models'].sum()} fits)"
        for kind, g in models.groupby("model", sort=False)
    )
    return (
        f"Training the shared models, once per fold and preset and shared by every method that explains them, "
        f"comes on top: {each}. "
    )


def _collapsed(part: Part, setting: str, table: pd.DataFrame, metrics: tuple[str, ...]) -> list[str]:
    """A setting's leaderboard in a collapsed section, its summary line naming the leader."""
    scored = table.dropna(subset=[metrics[0]])
    lead = (
        f": best {html.escape(str(scored.index[0]))} {scored.iloc[0][metrics[0]]:.2f}, {len(scored)} methods scored"
        if not scored.empty
        else ": no finished cell"
    )
    return [
        f'<details markdown="1" id="{part.anchor("setting", setting)}" data-setting="{html.escape(setting)}">',
        f"<summary>{html.escape(setting)}{lead}</summary>",
        "",
        _leaderboard_markdown(table, metrics),
        "",
        "</details>",
        "",
    ]


#: The most metrics a verdict's leaderboard shows (its headline first), so a table fits a screen.
LEADERBOARD_METRICS = 4


def _verdict_sections(part: Part, truth_part: Part | None, report: Report, metrics: tuple[str, ...]) -> list[str]:
    """A scorer other than the ground truth (ROAD, ...): its leaderboard, its curves, and its ranking of the
    methods beside the ground truth's on the same cells."""
    from synthbench.report import figures

    results, prefix, heading, scorer, kind = part.results, part.prefix, part.heading, part.scorer, part.kind
    truth = None if truth_part is None else truth_part.results
    abilities, declared = results.catalogue.scorer(scorer).abilities, results.catalogue.scorer(scorer).metrics
    names = scored_metrics(part)
    md = [f"## {scorer} leaderboard{heading}", ""]
    if not names:
        return md + [f"No finished cell has a {scorer} value.", ""]
    controls = sorted({c for m in names if (c := declared[m].control) is not None})
    md += [
        " ".join(f"`{m}`: the {declared[m].description} ({declared[m].direction} is better)." for m in names)
        + (
            f" The chance columns are the `{', '.join(controls)}` control's mean in this store, measured the same "
            "way on each method's own model (`random@forest` beside the methods that explain the forest)."
            if controls
            else ""
        )
        + " Means over the folds' cells with 95 % Student-t confidence intervals.",
        "",
    ]
    md += _controls_lines(results, names[0])
    shown = names[:LEADERBOARD_METRICS]
    if len(names) > len(shown):
        md += [f"The tables show the first {len(shown)} metrics; the store holds all {len(names)}.", ""]
    md += ["Per dataset (click to open):", ""]
    for setting in results.settings:
        table = tables.summary_table(results, metrics=shown, setting=setting)
        md += _collapsed(part, setting, table.dropna(subset=[names[0]]), shown)
    all_curves = tables.scorer_curve_table(results)
    model_level = set(abilities.model_curves)
    curves = all_curves[~all_curves["curve"].isin(model_level)]
    drawn = abilities.report_curves  # the curves a scorer asks a report to show
    if drawn:
        curves = curves[curves["curve"].isin(drawn)]
        curves = (
            curves.assign(order=curves["curve"].map(drawn.index))
            .sort_values("order", kind="stable")
            .drop(columns="order")
        )
    styles = figures.method_styles(results.methods, results.families)
    axis = abilities.curve_axis
    lead = declared[names[0]]
    limits = lead.limits if all(map(np.isfinite, lead.limits)) else (-np.inf, np.inf)
    if not curves.empty:
        md += [
            f"## {scorer} curves{heading}",
            "",
            f"Mean value of each curve {scorer} measured, per {axis}, per setting and decoy count; bands are 95 % "
            "confidence intervals over the cells.",
            "",
            *_figure(
                report,
                True,
                f"{prefix}{scorer}_curves.png",
                f"{scorer} curves",
                lambda: figures.scorer_curves(curves, styles, ylabel=lead.unit or names[0], limits=limits, xlabel=axis),
            ),
            (
                f"Each curve's mean per method and {axis.split(' (')[0]}:"
                if drawn
                else f"At the last point ({curves['x'].max():g}), the mean of each curve:"
            ),
            "",
            _curves_markdown(curves, every_x=bool(drawn)),
            "",
        ]
    caption = abilities.examples_caption
    if caption and kind == "image":
        md += _attacked_maps(results, truth, report, scorer, caption, prefix, heading)
    model_curves = all_curves[all_curves["curve"].isin(model_level)]
    if not model_curves.empty:
        md += _model_curves_lines(model_curves, axis)
        md += _figure(
            report,
            True,
            f"{prefix}{scorer}_model_curves.png",
            f"{scorer} model curves",
            lambda: figures.scorer_curves(
                model_curves.assign(method=model_curves["curve"]),
                {},
                ylabel="Spearman correlation",
                limits=(-1.0, 1.0),
                xlabel=axis,
            ),
        )
        md += [""]
    truth_metric = None if truth_part is None else headline(truth_part, metrics)
    md += [f"## {scorer} beside the ground truth{heading}", ""]
    paired = (
        pd.DataFrame()
        if truth_part is None or truth_metric is None
        else tables.beside_truth(results, truth_part.results, names[0], truth_metric)
    )
    if truth_part is None or truth_metric is None or paired.empty:
        return md + [
            f"This store holds no ground-truth cell paired with a {scorer} cell (run the same grid with "
            f"`--scorer ground_truth,{scorer}` to set the two side by side).",
            "",
        ]
    agree = tables.agreement(
        paired, declared[names[0]].direction, truth_part.results.metric(truth_metric, truth_part.scorer).direction
    )
    md += [
        f"Each method's mean `{names[0]}` beside its mean `{truth_metric}` (the ground truth) on the same cells, "
        f"and the rank correlation between the two orderings of the methods (positive: `{scorer}` ranks the "
        "methods as the truth does; scipy.stats Spearman and Kendall, with their p-values).",
        "",
        _agreement_markdown(agree),
        "",
        _beside_markdown(paired, truth_metric, names[0]),
        "",
        *_figure(
            report,
            True,
            f"{prefix}{scorer}_vs_truth.png",
            f"{scorer} against the ground truth",
            lambda: figures.truth_scatter(paired, styles, truth=truth_metric, verdict=names[0]),
        ),
    ]
    return md


def _model_curves_lines(curves: pd.DataFrame, axis: str) -> list[str]:
    """Curves that describe the fold's model (the same for every method): their mean per setting and x."""
    lines = []
    for name, part in curves.groupby("curve", sort=False):
        part = part.assign(setting=[tables.setting_label(s, d) for s, d in zip(part["setting"], part["n_decoys"])])
        table = part.pivot_table(index="setting", columns="x", values="mean", aggfunc="mean", sort=False)
        table.columns = [f"{x:g}" for x in table.columns]
        what = _MODEL_CURVES.get(name, f"`{name}`")
        lines += [
            f"{what} Columns: the {axis}.",
            "",
            table.map(lambda v: "–" if pd.isna(v) else f"{v:+.2f}").to_markdown(disable_numparse=True),
            "",
        ]
    return lines


#: What a model-level curve shows, for the report.
_MODEL_CURVES = {
    "activation_scale": "Why top-down randomisation cannot rank methods (Binder et al. 2023, claim (ii)): after the "
    "layers above a layer are re-drawn, the Spearman correlation, over that layer's input units, "
    "between each unit's mean |activation| and its contribution to the randomised output "
    "(|activation x gradient|), averaged over the folds. Near 1, the randomised output follows the "
    "trained activations' scale whatever the new weights, so every map after randomisation keeps "
    "that imprint.",
}


def _controls_lines(results: Results, metric: str) -> list[str]:
    """The sentence saying whether the controls do as well as the methods on ``metric`` (none when no control ran)."""
    verdict = control_verdict(results.scores, metric, results.catalogue)
    return [verdict, ""] if verdict else []


def _trust_section(validity: VerdictValidity, report: Report) -> list[str]:
    """Which verdict to trust: every verdict of the store beside the ground truth (:func:`trust_lines`)."""
    if validity.empty:
        return []
    return [
        _anchor("trust"),
        "",
        "## Which verdict to trust",
        "",
        *trust_lines(validity, lambda *args: _figure(report, *args), prefix="trust"),
    ]


def _methods_section(results: Results) -> list[str]:
    """What each method of the store is: its family, what it computes, its parameters (as its cells ran it, per
    input kind) and its reference; the tables' method names link here."""
    info = results.methods_info
    if info.empty:
        return []
    family_order = {f: i for i, f in enumerate(("classical", "neural selector", "attribution"))}
    names = sorted(info.index, key=lambda m: (family_order.get(info.at[m, "family"], 9), m))
    items = []
    for name in names:
        row = info.loc[name]
        cells = results.cells[results.cells["base_method"] == name]
        params = "; ".join(
            f"{kind}: <code>{html.escape(p)}</code>"
            for kind, p in cells[["kind", "method_params"]].drop_duplicates().itertuples(index=False)
        )
        family = row["family"] or "other"
        about = [html.escape(row["description"] or "no description recorded")]
        about += [f"Parameters: {params}."] if params else []
        about += [f"Reference: {html.escape(row['reference'])}."] if row["reference"] else []
        items.append(
            f'<dt id="{method_anchor(name)}" data-method="{html.escape(name)}" '
            f'data-family="{html.escape(family)}">'
            f"{html.escape(name)} <small>({html.escape(family)})</small></dt><dd>{' '.join(about)}</dd>"
        )
    return [
        "## Methods",
        "",
        "What each method of this store computes, with its parameters as the cells ran them and its reference; "
        "every method name in the tables links here.",
        "",
        '<dl class="methods">',
        *items,
        "</dl>",
        "",
    ]


def _attacked_maps(
    results: Results, truth: Results | None, report: Report, scorer: str, caption: str, prefix: str, heading: str
) -> list[str]:
    """Example maps a scorer stored (``caption`` says what they are) beside the same methods' maps of the same
    images in the ground-truth cells, when the store holds them."""
    from synthbench.report import figures

    after = tables.example_maps(results)
    before = {} if truth is None else tables.example_maps(truth)
    md = []
    for setting, (images, masks, maps) in after.items():
        known = before.get(setting, (None, None, {}))[2]
        rows = {}
        for method, m in maps.items():
            same = next((known[k] for k in (method, method.split("@")[0]) if k in known), None)  # a control: no @model
            if same is not None:
                rows[method] = same[: len(m)]
            rows[f"{method}, attacked"] = m
        md += [
            f"## {scorer}: example maps, {setting}{heading}",
            "",
            f"The first explained images of one fold (signal outlined in cyan); for each method its map as the "
            f"ground truth scored it (where the store holds it), then its map {caption}; channels summed in absolute "
            "value, each panel scaled to its own maximum.",
            "",
            *_figure(
                report,
                True,
                f"{prefix}{scorer}_maps_{re.sub(r'[^A-Za-z0-9]+', '_', setting)}.png",
                f"{scorer} example maps, {setting}",
                lambda i=images, s=masks, r=rows: figures.example_maps(i, s, r),
            ),
        ]
    return md


def _curves_markdown(curves: pd.DataFrame, *, every_x: bool) -> str:
    """Each method's mean of each curve, one column per setting, decoy count and curve: at every x (a row per
    method and x) or at the largest x (a row per method)."""
    part = curves if every_x else curves[curves["x"] == curves["x"].max()]
    label = [f"{tables.setting_label(s, d)} {c}" for s, d, c in zip(part["setting"], part["n_decoys"], part["curve"])]
    out = part.assign(column=label).pivot_table(
        index=["method", "x"] if every_x else "method", columns="column", values="mean", sort=False
    )[list(dict.fromkeys(label))]
    if every_x:
        out.index = [f"{m} @ {x:.4g}" for m, x in out.index]
    out.index.name, out.columns.name = "method @ x" if every_x else "method", None
    return out.map(lambda v: "–" if pd.isna(v) else f"{v:.3f}").to_markdown(disable_numparse=True)


def _agreement_markdown(agree: pd.DataFrame) -> str:
    out = pd.DataFrame(
        {
            "setting": [tables.setting_label(s, d) for s, d in zip(agree["setting"], agree["n_decoys"])],
            "methods": agree["methods"].to_numpy(),
            "Spearman ρ (p)": [_coef(r, p) for r, p in zip(agree["spearman"], agree["spearman_p"])],
            "Kendall τ (p)": [_coef(r, p) for r, p in zip(agree["kendall"], agree["kendall_p"])],
        }
    )
    return out.to_markdown(index=False, disable_numparse=True)


def _coef(value: float, p: float) -> str:
    return "–" if pd.isna(value) else f"{value:+.2f} ({p:.2g})"


def _beside_markdown(paired: pd.DataFrame, truth: str, verdict: str) -> str:
    table = paired.assign(setting=[tables.setting_label(s, d) for s, d in zip(paired["setting"], paired["n_decoys"])])
    out = table.pivot_table(index="method", columns="setting", values=["truth", "verdict"], aggfunc="mean", sort=False)
    out.columns = [f"{s}: {truth if which == 'truth' else verdict}" for which, s in out.columns]
    out = out[sorted(out.columns, key=lambda c: c.split(": ")[0])]
    out.index.name = "method"
    return out.map(lambda v: "–" if pd.isna(v) else f"{v:.3f}").to_markdown(disable_numparse=True)


def _image_sections(part: Part, report: Report) -> list[str]:
    from synthbench.report import figures

    results, prefix, heading, scorer = part.results, part.prefix, part.heading, part.scorer
    metrics = tuple(m for m in IMAGE_METRICS if m in set(results.scores["metric"]))
    md = [f"## Localisation leaderboard{heading}", ""]
    if not metrics:
        return md + [
            "No finished cell of these images has a localisation score (the data have no masks, or no cell finished).",
            "",
        ]
    aggregation = (
        json.loads(results.cells["scorer_params"].dropna().iloc[0])
        if results.cells["scorer_params"].notna().any()
        else {}
    )
    md += [
        "Each method's maps of the explained images, "
        f"aggregated over channels ({aggregation.get('channel_aggregation', 'sum_abs')}), against each image's mask "
        "of signal pixels. "
        + " ".join(f"`{m}`: the {results.metric(m, scorer).description}." for m in metrics)
        + " All are higher-is-better; the chance columns are the values of a random map. Means over the folds' cells "
        "with 95 % Student-t confidence intervals; method s / cell is the method's own wall seconds, the CNN's "
        "training (once per fold, shared by every method) in the next column and in the models table. "
        + _competence_rule(results),
        "",
        *_controls_lines(results, metrics[0]),
    ]
    scored = set(results.scores.dropna(subset=["metric"])["setting"])
    md += ["Per image setting (click to open):", ""]
    for setting in results.settings:
        if setting not in scored:
            md += [f"### {setting}", "", _unscored_sentence(results, setting), ""]
            continue
        md += _collapsed(part, setting, tables.summary_table(results, metrics=metrics, setting=setting), metrics)
    curves = tables.decoy_table(results, metrics[0])
    curves = curves[curves.groupby("setting")["n_decoys"].transform("nunique") > 1]
    if not curves.empty:
        settings = list(dict.fromkeys(curves["setting"]))
        md += [
            f"## Localisation against the number of distractors{heading}",
            "",
            f"Mean `{metrics[0]}` per distractor count for the image settings measured at several counts, one "
            "column of panels per setting and one row per method family; bands are 95 % confidence intervals, the "
            "dashed line is chance.",
            "",
            *_figure(
                report,
                True,
                f"{prefix}distractor_curves.png",
                "localisation against the number of distractors",
                lambda: figures.decoy_curves(
                    curves,
                    figures.method_styles(results.methods, results.families),
                    metric=results.metric(metrics[0], scorer),
                    settings=settings,
                    decoys="distractor patches",
                ),
            ),
        ]
    models = tables.model_table(results)
    if not models.empty:
        md += [
            _anchor(part.anchor("models")),
            "",
            f"## The models the maps explain{heading}",
            "",
            "Held-out accuracy of the CNN of each fold (mean over folds), per setting and distractor count, and the "
            "seconds one training took (once per fold, shared by every method that explains it):",
            "",
            _image_models_markdown(models),
            "",
        ]
    examples = tables.example_maps(results)
    for setting, (images, masks, maps) in examples.items():
        about = (
            "The first explained images of fold 0 (signal outlined in cyan), then each method's map of them "
            "(channels summed in absolute value, each panel scaled to its own maximum)."
        )
        if images is None:
            about = _maps_alone_sentence(results, setting)
        md += [
            f"## Example maps, {setting}{heading}",
            "",
            about,
            "",
            *_figure(
                report,
                True,
                f"{prefix}maps_{re.sub(r'[^A-Za-z0-9]+', '_', setting)}.png",
                f"example maps, {setting}",
                lambda i=images, s=masks, m=maps: figures.example_maps(i, s, m),
            ),
        ]
    return md


def _unscored_sentence(results: Results, setting: str) -> str:
    """Why an image setting has no localisation score: the data have no masks (as its cells record), or
    no cell finished."""
    cells = results.cells[results.cells["setting"] == setting]
    recorded = cells["masks"].dropna() if "masks" in cells else pd.Series(dtype=float)
    if (
        not recorded.empty
        and not recorded.astype(bool).any()
        and not cells["global_truth"].fillna(0).astype(bool).any()
    ):
        return (
            "No masks: these images have no ground truth to localise (they serve scorers that need none, such as "
            "remove-and-retrain); their maps are shown below."
        )
    if not recorded.empty:
        return (
            f"No localisation score: these images have ground truth, but none of their {len(cells)} cells "
            "finished (see the failed and missing counts above)."
        )
    return (
        "No localisation score: no cell of these images finished, or they have no masks (their cells do not "
        "record which: no data were made, or the store was written before synthbench recorded it)."
    )


def _datasets_line(results: Results) -> str:
    """The provenance line of the datasets: each with its input kind and, for a plugin's, the plugin."""
    return "- datasets: " + ", ".join(
        f"{name} ({row.kind}" + (f", from the plugin `{plugin}`)" if (plugin := _plugin(results, name)) else ")")
        for name, row in results.datasets.iterrows()
    )


def _plugin(results: Results, dataset: str) -> str | None:
    """The plugin that registers ``dataset``, as the store records it; None for synthbench's own (or unknown)."""
    if dataset not in results.datasets.index:
        return None
    plugin = results.datasets.at[dataset, "plugin"]
    return None if pd.isna(plugin) or not plugin else str(plugin)


def _maps_alone_sentence(results: Results, setting: str) -> str:
    """The note under example maps drawn without their images: which plugin (or data folder) would draw them."""
    dataset = results.cells.loc[results.cells["setting"] == setting, "dataset"].iloc[0]
    plugin = _plugin(results, dataset)
    from synthbench import datasets

    if dataset in datasets.names() and datasets.spec(dataset).reads_files:
        how = "pass `--data-dir` (the folder of its files)"
    elif plugin:
        how = f"pass `--plugin {plugin}` (the plugin that registers `{dataset}`)"
    else:
        how = f"import the plugin that registers `{dataset}` (`--plugin MODULE|PATH.py`)"
    return (
        f"Each method's maps of the first explained images of fold 0 (channels summed in absolute value, each "
        f"panel scaled to its own maximum), drawn **without the images and their masks**: those are generated "
        f"again from dataset `{dataset}`, which this process cannot make now. To draw them, {how}. Every number "
        "of this report comes from the store and is complete without it."
    )


def _image_models_markdown(models: pd.DataFrame) -> str:
    table = models.assign(
        decoys=models["n_decoys"].map(
            lambda d: "no distractors axis" if pd.isna(d) or d < 0 else f"{int(d)} distractors"
        ),
        entry=models["model"] + " on " + models["setting"],
    )
    out = table.pivot_table(index="entry", columns="decoys", values="accuracy", aggfunc="mean")
    order = table.assign(d=table["n_decoys"].fillna(-1)).drop_duplicates("decoys").sort_values("d")["decoys"]
    out = out[[c for c in order if c in out.columns]].map(lambda v: "–" if pd.isna(v) else f"{v:.3f}")
    fits = {entry: _per_fit(g, "train_seconds") for entry, g in table.groupby("entry")}
    out["training s / fit"] = [_seconds(fits[e]) for e in out.index]
    out.index.name, out.columns.name = "model", None
    return out.to_markdown(disable_numparse=True)


def write_report(report: Report, out_dir: str | Path) -> list[Path]:
    """Write ``report.md``, ``report.html`` and each figure's PNG into ``out_dir`` (created if needed).

    Everything is written to a staging folder inside ``out_dir`` first and moved in at the end;
    on any error the staging folder is removed (and ``out_dir`` too if this call created it), and
    the error propagates. Returns the written paths.
    """
    out = Path(out_dir)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".report-", dir=out))
    try:
        images = {}
        for name, fig in report.figures.items():
            fig.savefig(staging / name, dpi=150, bbox_inches="tight", metadata={"Software": None})
            images[name] = (staging / name).read_bytes()
        (staging / "report.md").write_text(report.markdown, encoding="utf-8")
        (staging / "report.html").write_text(report.html(images), encoding="utf-8")
        written = []
        for path in sorted(staging.iterdir()):
            target = out / path.name
            path.replace(target)
            written.append(target)
        return written
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
