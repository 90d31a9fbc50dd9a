"""The parts of a store that a report keeps apart.

A store may hold several input kinds, scorers (the ground truth and verdicts such as ROAD, ROAR,
fragility), scorer settings and explain modes; numbers of two parts are never averaged together.
:func:`store_parts` splits a store into them, :func:`truth_of` finds the ground-truth part a
verdict is compared with, and :func:`headline` names the metric a part is judged by. How each verdict agrees with
the truth is :mod:`synthbench.report.study`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from synthbench.report.results import Results

__all__ = [
    "Part",
    "slug",
    "method_anchor",
    "method_link",
    "setting_difference",
    "explained_rows",
    "store_parts",
    "truth_of",
    "scored_metrics",
    "headline",
    "verdict_metric",
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
    def judges_verdict(self) -> bool:
        """Whether the part's scorer judges another verdict (MetaQuantus' meta-consistency), not the methods."""
        return self.results.catalogue.scorer(self.scorer).abilities.judges_verdict

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


def setting_difference(setting: str, settings: Iterable[str]) -> str:
    """What sets one of a scorer's settings apart from its others: ``key=value`` of each option whose value
    differs among ``settings`` (the cells' ``scorer_params``, JSON; ``""`` for the registered defaults), in the
    setting's own order, comma-separated; ``setting`` itself where that leaves nothing (or it is not JSON)."""
    try:
        parsed = {s: json.loads(s) if s else {} for s in {setting, *settings}}
    except json.JSONDecodeError:
        return setting
    mine = parsed[setting]
    keys = [k for k in mine if len({json.dumps(p.get(k), sort_keys=True) for p in parsed.values()}) > 1]
    return ", ".join(f"{k}={json.dumps(mine[k], sort_keys=True)}" for k in keys) or setting


def explained_rows(explain: str) -> str:
    """The rows a cell's ``explain`` names, in words: ``test rows``, ``first 100 test rows``
    (:func:`~synthbench.protocol.explained_part`'s spelling, read without importing it)."""
    part, _, first = explain.partition(":")
    return f"first {first} {part} rows" if first else f"{part} rows"


def store_parts(results: Results) -> list[Part]:
    """The store split into parts whose numbers may be compared, in store order."""
    params = results.cells["scorer_params"].fillna("")
    keys = list(dict.fromkeys(zip(results.cells["kind"], results.cells["scorer"], params, results.cells["explain"])))
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

        own = {p for (k, sc, p, _) in keys if k == kind and sc == scorer}  # the scorer's settings on this kind
        named = f"scorer {scorer}" + (f" ({setting_difference(setting, own)})" if len(own) > 1 else "")
        label = f"{kind} data, {named}, explaining the {explained_rows(explain)}" if len(keys) > 1 else ""
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
    return verdict_metric(part)


def verdict_metric(part: Part) -> str | None:
    """The metric a verdict is judged by: its first declared metric with a value (None without)."""
    return next(iter(scored_metrics(part)), None)
