"""The parts of a store that a report keeps apart, and how each verdict agrees with the ground truth.

A store may hold several input kinds, scorers (the ground truth and verdicts such as ROAD, ROAR,
fragility), scorer settings and explain modes; numbers of two parts are never averaged together.
:func:`store_parts` splits a store into them, :func:`truth_of` finds the ground-truth part a
verdict is compared with, and :func:`verdict_agreement` is the table of every verdict's rank
agreement with the truth (the report's "Which verdict to trust" and its summary read it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from synthbench.report import tables
from synthbench.report.results import Results
from synthbench.report.trust import rank_agreement

__all__ = [
    "Part",
    "slug",
    "method_anchor",
    "method_link",
    "store_parts",
    "truth_of",
    "scored_metrics",
    "headline",
    "verdict_agreement",
    "IMAGE_METRICS",
]

#: The localisation metrics of the image leaderboard, headline first.
IMAGE_METRICS = ("rank_accuracy", "mass_accuracy", "pointing_game", "map_auroc", "top_k_intersection")


@dataclass(frozen=True)
class Part:
    """One part of a store: cells of one input kind, scorer (at one setting) and explain mode.

    ``label`` names it in headings (empty for a store of one part); ``prefix`` starts its figure
    file names and ``heading`` ends its section headings (both empty for a store of one part).
    """

    label: str
    kind: str
    results: Results
    prefix: str = ""
    heading: str = ""

    def anchor(self, *names: str) -> str:
        """The HTML id of one of the part's tables (``anchor("setting", "ring")`` -> ``part2-setting-ring``)."""
        return slug(self.prefix, *names)

    @property
    def scorer(self) -> str:
        return str(self.results.cells["scorer"].iloc[0])

    @property
    def is_truth(self) -> bool:
        """Whether the part is scored against the truth (its scorer declares metrics computed from the truth,
        :attr:`~synthbench.catalogue.MetricInfo.truth_based`), not a verdict such as ROAD."""
        return any(m.truth_based for m in self.results.catalogue.scorer(self.scorer).metrics.values())


def slug(*names: str) -> str:
    """An HTML id made of ``names``: lower case, runs of other characters than letters and digits as one dash."""
    return "-".join(filter(None, (re.sub(r"[^a-z0-9]+", "-", n.lower()).strip("-") for n in names)))


def method_anchor(method: str) -> str:
    """The HTML id of a registered method's description in the report."""
    return slug("method", method)


def method_link(entry: str) -> str:
    """A table's method entry as a Markdown link to its method's description (``saliency@sparse_mlp`` ->
    ``#method-saliency``)."""
    return f"[{entry}](#{method_anchor(entry.partition('@')[0])})"


def store_parts(results: Results) -> list[Part]:
    """The store split into parts whose numbers may be compared, in store order."""
    params = results.cells["scorer_params"].fillna("")
    keys = list(dict.fromkeys(zip(results.cells["kind"], results.cells["scorer"], params, results.cells["explain"])))
    variants = params.groupby([results.cells["kind"], results.cells["scorer"]]).nunique()
    several = {scorer for (_, scorer), n in variants.items() if n > 1}  # scorers run at several settings
    out = []
    for i, (kind, scorer, setting, explain) in enumerate(keys):

        def pick(frame: pd.DataFrame) -> pd.DataFrame:
            keep = (
                (frame["kind"] == kind)
                & (frame["scorer"] == scorer)
                & (frame["explain"] == explain)
                & (frame["scorer_params"].fillna("") == setting)
            )
            return frame[keep].reset_index(drop=True)

        named = f"scorer {scorer}" + (f" {setting}" if scorer in several else "")
        label = f"{kind} data, {named}, explaining the {explain} rows" if len(keys) > 1 else ""
        curves = pick(results.curves) if not results.curves.empty else results.curves
        part = results.select(pick(results.scores), pick(results.cells), curves)
        out.append(Part(label, kind, part, *(("", "") if len(keys) == 1 else (f"part{i + 1}_", f" ({label})"))))
    return out


def truth_of(parts: list[Part], part: Part) -> Part | None:
    """The ground-truth part on the same input kind and explain mode as ``part``, if the store holds one."""
    explain = part.results.cells["explain"].iloc[0]
    for other in parts:
        if (
            other.kind == part.kind
            and other.scorer == "ground_truth"
            and other.results.cells["explain"].iloc[0] == explain
        ):
            return other
    return None


def scored_metrics(part: Part) -> tuple[str, ...]:
    """The metrics the part's scorer declares for its input kind that have a value in it, headline first."""
    present = set(part.results.scores["metric"])
    declared = part.results.catalogue.scorer(part.scorer).metrics
    return tuple(m for m, info in declared.items() if part.kind in info.kinds and m in present)


def headline(part: Part, metrics: tuple[str, ...]) -> str | None:
    """The metric a part is judged by: ``metrics[0]`` for tables against the truth, the first localisation metric
    for images, a verdict's first declared metric; None when the part has no value of it."""
    if part.is_truth:
        wanted = metrics[0] if part.kind == "tabular" else IMAGE_METRICS[0]
        return wanted if wanted in set(part.results.scores["metric"]) else None
    return next(iter(scored_metrics(part)), None)


def verdict_agreement(parts: list[Part], metrics: tuple[str, ...]) -> pd.DataFrame:
    """Every verdict's rank agreement with the ground truth on the same cells, per setting and decoy count.

    Returns the columns of :func:`~synthbench.report.trust.rank_agreement` plus ``part`` (its index in
    ``parts``), ``scorer``, ``metric`` (the verdict's headline), ``truth_metric`` and ``verdict`` (the name the
    report shows: scorer and metric, with the scorer's setting when it ran at several); empty when the store
    holds no verdict beside a ground-truth part.
    """
    frames = []
    for i, part in enumerate(parts):
        truth = truth_of(parts, part)
        metric = headline(part, metrics)
        if part.is_truth or truth is None or metric is None:
            continue
        truth_metric = headline(truth, metrics)
        if truth_metric is None:
            continue
        paired = tables.paired_cells(part.results, truth.results, metric, truth_metric)
        if paired.empty:
            continue
        paired = paired.assign(fold=[f"{s}/{f}" for s, f in zip(paired["seed"], paired["fold"])])
        agree = rank_agreement(
            paired,
            part.results.metric(metric, part.scorer).direction,
            truth.results.metric(truth_metric, truth.scorer).direction,
            controls=set(paired.loc[paired["control"], "method"]),
        )
        params = part.results.cells["scorer_params"].fillna("").iloc[0]
        same = [other for other in parts if other.scorer == part.scorer]
        kinds = len({other.kind for other in same}) > 1  # the scorer on tables and on images
        settings = sum(other.kind == part.kind for other in same) > 1  # the scorer at several settings
        name = (
            f"{part.scorer} `{metric}`"
            + (f" on {'images' if part.kind == 'image' else 'tables'}" if kinds else "")
            + (f" ({params})" if settings and params else "")
        )
        frames.append(agree.assign(part=i, scorer=part.scorer, metric=metric, truth_metric=truth_metric, verdict=name))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
