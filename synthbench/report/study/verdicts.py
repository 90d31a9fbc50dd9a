"""How each verdict agrees with the ground truth, orders the ladder, and holds up without the truth, per setting.

Each verdict part of a store (:func:`~synthbench.report.parts.store_parts`) is paired with the ground-truth part of its
input kind: :func:`verdict_agreement` ranks the methods by both per setting and explained model
(:func:`~synthbench.report.study.validity.rank_agreement`), :func:`verdict_ladder` ranks the ladder's rungs against
their known order, :func:`verdict_reliability`, :func:`verdict_consistency` and :func:`verdict_meta_consistency`
measure the verdict without the truth (:mod:`synthbench.report.study.reliability`), and :func:`verdict_validity`
summarises them across settings (:class:`VerdictValidity`: what the study page and the report's section show).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from synthbench.report import tables
from synthbench.report.parts import Part, scored_metrics, setting_difference, truth_of, verdict_metric
from synthbench.report.study.reliability import (
    RELIABILITY_MEASURES,
    fold_means,
    internal_consistency,
    meta_consistency,
    reliability_against_validity,
    reliability_table,
    setting_reliability,
)
from synthbench.report.study.validity import (
    VALIDITY_COLUMNS,
    rank_agreement,
    reliable_truth,
    validity_table,
    verdict_tests,
)
from synthbench.report.tables import judgeable, judged_values

__all__ = [
    "verdict_agreement",
    "verdict_ladder",
    "verdict_validity",
    "verdict_reliability",
    "verdict_meta_consistency",
    "verdict_consistency",
    "VerdictValidity",
    "TRUTH_METRICS",
    "MIN_TRUTH_SPREAD",
    "SETTING_KEYS",
    "option_effects",
    "OPTION_COLUMNS",
]

#: The truth metrics a verdict's ordering is compared with, per input kind, in order of preference: a setting
#: takes the first that separates its methods (:data:`MIN_TRUTH_SPREAD`). Where the data carry a per-example truth
#: (switch and the other L2X sets) the per-example one comes first: a global mean over the fold hides what a local
#: map gets right or wrong, and local maps are what most verdicts judge (the methods without maps then leave that
#: setting's ordering). Average precision reads the whole ranking, so it separates methods that best-k scores alike
#: (every gradient method at 1.00 on xor).
TRUTH_METRICS = {
    "tabular": ("local_tpr_at_k", "average_precision", "auroc", "best_k"),
    "image": ("rank_accuracy", "map_auroc", "mass_accuracy", "pointing_game"),
}

#: The least range of the methods' mean truth for a truth metric to separate them (its scale is 0..1).
MIN_TRUTH_SPREAD = 0.05


def _truth_choice(paired: pd.DataFrame, keys: list[str], candidates: list[str]) -> pd.DataFrame:
    """Per setting (``keys``), the truth metric its verdict ordering is compared with: the first of ``candidates``
    whose fold means of the non-control methods span at least :data:`MIN_TRUTH_SPREAD`, else the first (the truth
    then separates none of them). Returns ``keys`` and ``truth_metric``, one row per setting."""
    means = paired[~paired["control"]].groupby([*keys, "truth_metric", "method"], sort=False)["truth"].mean()
    spread = means.groupby(level=list(range(len(keys) + 1)), sort=False).agg(np.ptp).rename("spread").reset_index()
    order = spread["truth_metric"].map(candidates.index)
    spread["preference"] = order - len(candidates) * (spread["spread"] >= MIN_TRUTH_SPREAD)
    chosen = spread.sort_values("preference", kind="stable").drop_duplicates(keys)
    return chosen[[*keys, "truth_metric"]]


def _by_fold(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with ``apart``, whether the model of the row's (setting, seed, fold, model) did not learn (any of
    its cells explains a model below the competence threshold; controls and methods judged on it follow), and
    ``fold`` made a ``seed/fold`` key (the unit the bootstraps resample)."""
    fold = ["setting", "n_decoys", "seed", "fold", "model"]
    apart = rows.groupby(fold, sort=False)["incompetent"].transform("any").astype(bool)
    return rows.assign(apart=apart, fold=[f"{s}/{f}" for s, f in zip(rows["seed"], rows["fold"])])


def _method_rows(part: Part, metric: str, judged: Part | None = None) -> pd.DataFrame:
    """The finished cells of ``part`` (their ``metric`` value) that a verdict ranks: the methods ``judged`` (the
    part itself, or the verdict a meta-consistency part judged) can judge, controls left out, with
    :func:`_by_fold`'s columns."""
    rows = judgeable(judged_values(part.results, metric), (judged or part).results)
    return _by_fold(rows[~rows["control"]])


#: What makes one setting of a verdict's agreement: a dataset at a decoy count, one explained model, and whether
#: that model learned (``apart``: it did not, on those folds).
SETTING_KEYS = ["setting", "n_decoys", "model", "apart"]


def verdict_agreement(parts: list[Part]) -> pd.DataFrame:
    """Every verdict's rank agreement with the ground truth on the same cells, per setting and explained model.

    Each verdict part is paired with the ground-truth part of its input kind; its headline metric is compared with
    the truth metric of each setting (:data:`TRUTH_METRICS`, the first that separates the methods); each model is
    ordered alone (a method that reads none with the model it was judged on), and the folds whose model did not
    learn are kept apart (``apart``). The ladder's rungs are left out (:func:`verdict_ladder` ranks them).

    Returns the columns :data:`SETTING_KEYS` and those of :func:`~synthbench.report.study.validity.rank_agreement`, plus
    ``part`` (its index in ``parts``), ``kind``, ``scorer``, ``metric`` (the verdict's headline),
    ``truth_metric``, ``verdict`` (the name the report shows: scorer and metric, with the scorer's setting
    when it ran at several) and ``option`` (that setting, empty for the defaults); empty when the store holds no
    verdict beside a ground-truth part.
    """
    frames = []
    for i, part in enumerate(parts):
        truth = truth_of(parts, part)
        metric = verdict_metric(part)
        if part.is_truth or part.judges_verdict or truth is None or metric is None:
            continue
        present = set(truth.results.scores["metric"])
        candidates = [m for m in TRUTH_METRICS.get(part.kind, ()) if m in present] or list(scored_metrics(truth))[:1]
        if not candidates:
            continue
        paired = pd.concat(
            [tables.paired_cells(part.results, truth.results, metric, m).assign(truth_metric=m) for m in candidates],
            ignore_index=True,
        )
        if paired.empty:
            continue
        paired = _by_fold(paired[paired["rung"].isna() | paired["control"]])  # the ladder's rungs are not methods
        paired = paired.merge(_truth_choice(paired, SETTING_KEYS, candidates), on=[*SETTING_KEYS, "truth_metric"])
        name = _verdict_name(parts, part, metric)
        for truth_metric, rows in paired.groupby("truth_metric", sort=False):
            agree = rank_agreement(
                rows,
                part.results.metric(metric, part.scorer).direction,
                truth.results.metric(str(truth_metric), truth.scorer).direction,
                controls=set(rows.loc[rows["control"], "method"]),
                by=SETTING_KEYS,
            )
            frames.append(
                agree.assign(
                    part=i,
                    kind=part.kind,
                    scorer=part.scorer,
                    metric=metric,
                    truth_metric=truth_metric,
                    verdict=name,
                    option=_option(parts, part),
                )
            )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def verdict_ladder(parts: list[Part]) -> pd.DataFrame:
    """Every verdict's ordering of the ladder's rungs (:mod:`synthbench.methods.ladder`: a base method's maps with a
    growing share of one random map, the ``random`` control the top rung) against their known order, per setting and
    explained model: :func:`~synthbench.report.study.validity.rank_agreement` with the rungs' order in place of the
    truth (+1: the verdict ranks less noise above more, as built). No ground truth is needed.

    Returns the columns :data:`SETTING_KEYS` and those of :func:`~synthbench.report.study.validity.rank_agreement`, plus
    ``kind``, ``scorer``, ``metric`` and ``verdict``; empty when no verdict judged the rungs.
    """
    frames = []
    for part in parts:
        metric = verdict_metric(part)
        if part.is_truth or part.judges_verdict or metric is None:
            continue
        rows = judgeable(judged_values(part.results, metric), part.results)
        rows = _by_fold(rows[rows["rung"].notna()])
        if rows["rung"].nunique() < 2:
            continue
        agree = rank_agreement(
            rows.assign(truth=-rows["rung"], verdict=rows["value"]),
            part.results.metric(metric, part.scorer).direction,
            "higher",
            by=SETTING_KEYS,
        )
        frames.append(
            agree.assign(kind=part.kind, scorer=part.scorer, metric=metric, verdict=_verdict_name(parts, part, metric))
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _verdict_name(parts: list[Part], part: Part, metric: str) -> str:
    """The name a verdict goes by in the report: its scorer and metric, the input kind where the scorer ran on
    several, and its setting (:func:`_option`) where it ran at several."""
    kinds = len({other.kind for other in parts if other.scorer == part.scorer}) > 1  # the scorer on tables and images
    option = _option(parts, part)
    return (
        f"{part.scorer} `{metric}`"
        + (f" on {tables.data_word(part.kind)}" if kinds else "")
        + (f" ({option})" if option else "")
    )


def _option(parts: list[Part], part: Part) -> str:
    """What sets the part's scorer setting apart from the scorer's others on its input kind (``fill="imputed"``);
    empty for the registered defaults and for a scorer that ran at one setting."""
    params = part.results.cells["scorer_params"].fillna("").iloc[0]
    same = [o for o in parts if o.scorer == part.scorer and o.kind == part.kind]
    own = {o.results.cells["scorer_params"].fillna("").iloc[0] for o in same}
    return setting_difference(params, own) if len(own) > 1 and params else ""


def verdict_reliability(parts: list[Part]) -> pd.DataFrame:
    """Every verdict's inter-rater reliability across examples per setting and explained model
    (:func:`~synthbench.report.study.reliability.setting_reliability` of its headline metric's per-example values, the
    methods it can judge, controls left out, folds whose model did not learn apart).

    Returns the columns :data:`SETTING_KEYS` and :data:`~synthbench.report.study.reliability.RELIABILITY_COLUMNS`, plus
    ``kind``, ``scorer``, ``metric`` and ``verdict``; empty when no verdict recorded per-example values.
    """
    frames = []
    for part in parts:
        metric = verdict_metric(part)
        per_example = part.results.per_example
        if part.is_truth or part.judges_verdict or metric is None or per_example.empty:
            continue
        rows = _method_rows(part, metric).merge(
            per_example[per_example["metric"] == metric][["cell_id", "values"]], on="cell_id"
        )
        if rows.empty:
            continue
        frames.append(
            setting_reliability(rows, SETTING_KEYS).assign(
                kind=part.kind, scorer=part.scorer, metric=metric, verdict=_verdict_name(parts, part, metric)
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _judged_part(parts: list[Part], params: dict[str, Any], kind: str) -> Part | None:
    """The part of the verdict a meta-consistency part judged: its scorer at the same settings, on the same kind."""
    for other in parts:
        own = other.results.cells["scorer_params"].dropna()
        if (
            other.scorer == params.get("verdict")
            and other.kind == kind
            and (json.loads(own.iloc[0]) if len(own) else {}) == params.get("verdict_params")
        ):
            return other
    return None


def verdict_meta_consistency(parts: list[Part]) -> pd.DataFrame:
    """MetaQuantus' meta-consistency of every verdict a ``meta_consistency`` part judged, per setting and model.

    Returns :data:`SETTING_KEYS`, ``verdict`` (the judged verdict's name, as :func:`verdict_agreement` names it),
    ``kind``, ``perturbation``, then :func:`~synthbench.report.study.reliability.fold_means` of ``mc, iac_nr, iac_ar,
    iec_nr, iec_ar`` over the folds (``mc_lo``, ``mc_hi``, ``replicates``); empty without such a part.
    """
    frames = []
    for part in parts:
        if not part.judges_verdict or part.results.per_example.empty:
            continue
        params = json.loads(part.results.cells["scorer_params"].dropna().iloc[0])
        judged = _judged_part(parts, params, part.kind)
        metric = verdict_metric(judged) if judged is not None else None
        name = _verdict_name(parts, judged, metric) if judged is not None and metric else str(params.get("verdict"))
        rows = _method_rows(part, "meta_iac_nr", judged)
        k = int(params.get("perturbations", 0))
        needed = ["meta_unperturbed", *(f"meta_{w}_{i}" for i in range(k) for w in ("minor", "kept_minor"))]
        series = part.results.per_example.pivot(index="cell_id", columns="metric", values="values")
        if rows.empty or any(c not in series.columns for c in needed):
            continue
        wide = part.results.scores.pivot_table(index="cell_id", columns="metric", values="value", aggfunc="first")
        rows = rows.drop(columns="value").merge(
            wide.reindex(columns=["meta_iac_nr", "meta_iac_ar", "meta_iec_ar"]), left_on="cell_id", right_index=True
        )
        rows = rows.merge(series[needed], left_on="cell_id", right_index=True).dropna(subset=needed)
        criteria = ["mc", "iac_nr", "iac_ar", "iec_nr", "iec_ar"]
        frames.append(
            fold_means(meta_consistency(rows, SETTING_KEYS, k), SETTING_KEYS, criteria).assign(
                verdict=name, kind=part.kind, perturbation=params.get("perturbation")
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _variant_pair(part: Part, recorded: set[str]) -> tuple[str, str] | None:
    """Two of the part's metrics that measure the same thing (a metric and its declared ``variant_of``), both with
    per-example values: the first such pair in declaration order, one of the headline's first; None without."""
    declared = part.results.catalogue.scorer(part.scorer).metrics
    pairs = [
        (info.variant_of, name)
        for name, info in declared.items()
        if info.variant_of is not None and name in recorded and info.variant_of in recorded
    ]
    headline = verdict_metric(part)
    return next((p for p in pairs if headline in p), pairs[0] if pairs else None)


def verdict_consistency(parts: list[Part]) -> pd.DataFrame:
    """Every verdict's internal consistency (Tomsett et al. 2020) per setting and explained model: Spearman's rho
    across examples between two of its metrics that measure the same thing (:func:`_variant_pair`), per method,
    averaged over the methods and folds (:func:`~synthbench.report.study.reliability.internal_consistency`).

    Returns :data:`SETTING_KEYS`, :func:`~synthbench.report.study.reliability.fold_means`' columns for ``consistency``,
    ``verdict``, ``kind`` and ``pair`` (the two metrics); empty where no verdict records such a pair.
    """
    frames = []
    for part in parts:
        per_example = part.results.per_example
        metric = verdict_metric(part)
        if part.is_truth or part.judges_verdict or metric is None or per_example.empty:
            continue
        pair = _variant_pair(part, set(per_example["metric"]))
        if pair is None:
            continue
        series = per_example.pivot(index="cell_id", columns="metric", values="values")[list(pair)]
        series.columns = ["first", "second"]
        rows = _method_rows(part, metric).merge(series.dropna(), left_on="cell_id", right_index=True)
        if rows.empty:
            continue
        first, second = (1.0 if part.results.metric(m, part.scorer).direction == "higher" else -1.0 for m in pair)
        frames.append(
            internal_consistency(rows, SETTING_KEYS, (first, second)).assign(
                verdict=_verdict_name(parts, part, metric), kind=part.kind, pair=" ~ ".join(pair)
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@dataclass(frozen=True)
class VerdictValidity:
    """How far each verdict of a store can be trusted, measured against the ground truth.

    Attributes
    ----------
    settings : :func:`verdict_agreement`'s table, one row per verdict, setting and explained model
    summary : :func:`~synthbench.report.study.validity.validity_table` per ``verdict, kind, model, apart``: the mean
        agreement across settings with its hierarchical bootstrap interval, or the reason there is none; a verdict
        with no finished value (every cell skipped) has one row saying why; with the mean reliability across settings
        (:func:`~synthbench.report.study.reliability.reliability_table`: ``alpha_settings, alpha, alpha_lo,
        alpha_hi``), its internal consistency (``consistency...``) and meta-consistency (``mc...``) likewise
    tests : :func:`~synthbench.report.study.validity.verdict_tests` between the verdicts on models that learned, within
        each ``kind, model``, over the settings whose truth ordering is reliable
        (:func:`~synthbench.report.study.validity.reliable_truth`)
    reliability : :func:`verdict_reliability`'s table, one row per verdict, setting and explained model
    consistency : :func:`verdict_consistency`'s table, likewise
    meta : :func:`verdict_meta_consistency`'s table, one row per judged verdict, setting and explained model
    ladder : :func:`verdict_ladder`'s table, one row per verdict, setting and explained model; its mean across
        settings is the summary's ``ladder, ladder_lo, ladder_hi`` over ``ladder_settings`` settings
    options : :func:`option_effects`: each verdict that ran at several settings of its own options, each other setting
        beside its defaults
    predicts : ``{"alpha": ..., "consistency": ..., "mc": ...}``,
        :func:`~synthbench.report.study.reliability.reliability_against_validity` over the verdicts on models that
        learned: whether a verdict's reliability (Krippendorff's alpha, internal consistency, MetaQuantus'
        meta-consistency) predicts its validity
    """

    settings: pd.DataFrame
    summary: pd.DataFrame
    tests: pd.DataFrame
    reliability: pd.DataFrame
    consistency: pd.DataFrame
    meta: pd.DataFrame
    predicts: dict[str, dict[str, float]]
    ladder: pd.DataFrame
    options: pd.DataFrame

    @property
    def empty(self) -> bool:
        return self.summary.empty


def verdict_validity(parts: list[Part], *, seed: int = 0) -> VerdictValidity:
    """Every verdict's validity (agreement with the ground truth) per setting, across settings and pairwise."""
    settings = verdict_agreement(parts)
    groups = ["verdict", "kind", "model", "apart"]
    summary = validity_table(settings, groups, seed=seed) if not settings.empty else pd.DataFrame()
    learned = settings[~settings["apart"] & reliable_truth(settings)] if not settings.empty else settings
    tests = verdict_tests(learned, ["kind", "model"], ["setting", "n_decoys"]) if not learned.empty else pd.DataFrame()
    unmeasured = []
    for part in parts:
        if part.is_truth or part.judges_verdict or (not settings.empty and part.scorer in set(settings["scorer"])):
            continue
        cells = part.results.cells
        skipped = cells.loc[cells["status"] == "skipped", "message"].dropna()
        reason = (
            "no ground truth beside it on the same cells"
            if truth_of(parts, part) is None
            else f"no method's value to rank: {len(skipped)} of {len(cells)} cells skipped ({skipped.mode().iloc[0]})"
            if len(skipped)
            else "no finished value paired with the ground truth"
        )
        unmeasured.append(
            {
                "verdict": _verdict_name(parts, part, next(iter(part.results.catalogue.scorer(part.scorer).metrics))),
                "kind": part.kind,
                "model": "",
                "apart": False,
            }
            | {"settings": 0, "of": 0, "reason": reason}
        )
    if unmeasured:
        named = pd.DataFrame(unmeasured).reindex(columns=[*groups, *VALIDITY_COLUMNS])
        summary = pd.concat([summary, named], ignore_index=True) if not summary.empty else named
    reliability, meta, consistency = (
        verdict_reliability(parts),
        verdict_meta_consistency(parts),
        verdict_consistency(parts),
    )
    for table, value in ((reliability, "alpha"), (consistency, "consistency"), (meta, "mc")):
        if summary.empty:
            break
        columns = [f"{value}_settings", value, f"{value}_lo", f"{value}_hi"]
        found = reliability_table(table, groups, value, seed=seed) if not table.empty else pd.DataFrame()
        summary = (
            summary.merge(found, on=groups, how="left")
            if not found.empty
            else summary.assign(**{c: np.nan for c in columns})
        )
        summary[columns[0]] = summary[columns[0]].fillna(0).astype(int)
    ladder = verdict_ladder(parts)
    if not summary.empty:
        summary = _with_ladder(summary, ladder, groups, seed)
    learned_summary = summary[~summary["apart"].astype(bool)] if not summary.empty else summary
    none = {"rho": np.nan, "lo": np.nan, "hi": np.nan, "n": 0.0}
    predicts = {
        value: reliability_against_validity(learned_summary, value, seed=seed) if not learned_summary.empty else none
        for value in RELIABILITY_MEASURES
    }
    options = option_effects(summary, settings, tests) if not settings.empty else pd.DataFrame(columns=OPTION_COLUMNS)
    return VerdictValidity(settings, summary, tests, reliability, consistency, meta, predicts, ladder, options)


#: The columns of :func:`option_effects`.
OPTION_COLUMNS = [
    "verdict",
    "kind",
    "model",
    "base",
    "base_rho",
    "base_lo",
    "base_hi",
    "option",
    "rho",
    "lo",
    "hi",
    "settings",
    "difference",
    "p",
    "moves",
]


def option_effects(summary: pd.DataFrame, settings: pd.DataFrame, tests: pd.DataFrame) -> pd.DataFrame:
    """Does a verdict's validity depend on its own settings? For each verdict (scorer and headline metric) that ran
    at several settings of its options on one input kind, on the models that learned: each other setting beside the
    first in the store (the defaults where those ran with no options), with both mean agreements with the truth and
    their intervals (``summary``: :func:`~synthbench.report.study.validity.validity_table`'s), the paired difference
    (other minus base) over the settings with a reliable truth both measured and its Wilcoxon signed-rank p (their
    row of ``tests``, :func:`~synthbench.report.study.validity.verdict_tests`' table of the verdicts on models that
    learned), and ``moves``: either mean lies outside the other's interval.

    Returns :data:`OPTION_COLUMNS`, ``base`` and ``option`` the settings' differences (``fill="imputed"``), one
    row per verdict, other setting and model; empty where no verdict ran at several settings.
    """
    rows = []
    learned = summary[~summary["apart"].astype(bool)].set_index(["verdict", "kind", "model"])
    names = settings.drop_duplicates("verdict")
    for (kind, scorer, metric), group in names.groupby(["kind", "scorer", "metric"], sort=False):
        base = group[group["option"] == ""].iloc[0] if (group["option"] == "").any() else group.iloc[0]
        for other in group[group["verdict"] != base["verdict"]].itertuples():
            for model in dict.fromkeys(settings.loc[settings["verdict"] == base["verdict"], "model"]):
                keys = [(base["verdict"], kind, model), (other.verdict, kind, model)]
                if not all(k in learned.index for k in keys):
                    continue
                a, b = (learned.loc[k] for k in keys)
                shared, difference, p = _paired(tests, kind, model, base["verdict"], other.verdict)
                moves = _outside(b["spearman"], a["spearman_lo"], a["spearman_hi"]) or _outside(
                    a["spearman"], b["spearman_lo"], b["spearman_hi"]
                )
                rows.append(
                    (f"{scorer} `{metric}`", kind, model, base["option"])
                    + (a["spearman"], a["spearman_lo"], a["spearman_hi"], other.option)
                    + (b["spearman"], b["spearman_lo"], b["spearman_hi"], shared, difference, p, moves)
                )
    return pd.DataFrame(rows, columns=OPTION_COLUMNS)


def _paired(tests: pd.DataFrame, kind: str, model: str, base: str, other: str) -> tuple[int, float, float]:
    """The shared settings, the mean difference of rho (``other`` minus ``base``) and the p-value of the two
    verdicts' row of ``tests``; ``(0, nan, nan)`` where they were not tested."""
    if tests.empty:
        return 0, np.nan, np.nan
    pair = {base, other}
    found = tests[
        (tests["kind"] == kind) & (tests["model"] == model) & tests["verdict"].isin(pair) & tests["other"].isin(pair)
    ]
    if found.empty:
        return 0, np.nan, np.nan
    t = found.iloc[0]
    return int(t["settings"]), t["difference"] * (1 if t["verdict"] == other else -1), t["p"]


def _outside(value: float, lo: float, hi: float) -> bool:
    """Whether ``value`` lies outside ``[lo, hi]`` (False where either is NaN)."""
    return bool(value < lo or value > hi)


def _with_ladder(summary: pd.DataFrame, ladder: pd.DataFrame, groups: list[str], seed: int) -> pd.DataFrame:
    """``summary`` with each verdict's ladder score: the mean rho of its rung orderings across settings with the
    hierarchical interval (:func:`~synthbench.report.study.validity.validity_table`; the rungs' order is known, so every
    setting with a rho enters), as ``ladder_settings, ladder, ladder_lo, ladder_hi``."""
    columns = {
        "settings": "ladder_settings",
        "spearman": "ladder",
        "spearman_lo": "ladder_lo",
        "spearman_hi": "ladder_hi",
    }
    if ladder.empty:
        return summary.assign(ladder_settings=0, ladder=np.nan, ladder_lo=np.nan, ladder_hi=np.nan)
    found = validity_table(ladder, groups, min_truth_reliability=None, seed=seed)[[*groups, *columns]]
    out = summary.merge(found.rename(columns=columns), on=groups, how="left")
    return out.assign(ladder_settings=out["ladder_settings"].fillna(0).astype(int))
