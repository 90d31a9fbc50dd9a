"""Which verdict to trust, written out: the Markdown the report's section and the verdicts study page share.

:func:`trust_lines` writes :class:`~synthbench.report.study.verdicts.VerdictValidity` as tables and sentences: each
verdict's validity (agreement with the ground truth) across settings with its interval, its reliability without the
truth beside it, whether reliability predicts validity, which verdicts the paired tests tell apart, and the
agreement per setting.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from synthbench.report import tables
from synthbench.report.study.reliability import RELIABILITY_MEASURES
from synthbench.report.study.validity import MIN_TRUTH_RELIABILITY
from synthbench.report.study.verdicts import MIN_TRUTH_SPREAD, TRUTH_METRICS, VerdictValidity

__all__ = [
    "answer_lines",
    "ci_text",
    "trust_lines",
    "validity_markdown",
    "predicts_lines",
    "tests_lines",
    "per_setting_lines",
    "truth_reliability_lines",
    "options_lines",
    "precision_lines",
    "TARGET_HALF_WIDTH",
    "FigureHook",
]

#: ``figure(enabled, name, alt, draw) -> Markdown lines``: how :func:`trust_lines` adds a figure.
FigureHook = Callable[[bool, str, str, Callable[[], object]], list[str]]


def ci_text(mean: float, lo: float, hi: float, sign: str = "") -> str:
    """``0.45 [0.20, 0.66]`` (``sign="+"``: ``+0.45 [+0.20, +0.66]``), the mean alone without an interval, ``–``
    without a mean."""
    if pd.isna(mean):
        return "–"
    return f"{mean:{sign}.2f}" + ("" if pd.isna(lo) else f" [{lo:{sign}.2f}, {hi:{sign}.2f}]")


def _settings_text(row: object) -> str:
    """``5 of 8`` settings entering a verdict's mean, with how many a truth below the reliability threshold kept out."""
    text = f"{int(row.settings)} of {int(row.of)}"  # type: ignore[attr-defined]
    unreliable = row.unreliable  # type: ignore[attr-defined]
    return text + (f" ({int(unreliable)} truth unreliable)" if pd.notna(unreliable) and unreliable else "")


def answer_lines(summary: pd.DataFrame) -> list[str]:
    """The answer first: on models that learned, which verdicts follow the truth (their interval above 0), which
    reverse it (below 0), which cannot be told from no agreement, and which have no value, each with its mean rho and
    interval (and its ladder rho where measured)."""
    groups: dict[str, list[str]] = {"follow": [], "reverse": [], "unknown": [], "none": []}
    several = summary[["kind", "model"]].drop_duplicates().shape[0] > 1
    for r in summary.itertuples():
        data = "" if " on " in r.verdict else f"{tables.data_word(r.kind)}, "  # the name says it where it ran on both
        where = f" ({data}{r.model or 'no model'})" if several else ""
        if pd.isna(r.spearman):
            groups["none"].append(f"{r.verdict}{where}")
            continue
        ladder = "" if pd.isna(r.ladder) else f", ladder {r.ladder:+.2f}"
        text = f"{r.verdict}{where} {ci_text(r.spearman, r.spearman_lo, r.spearman_hi, '+')}{ladder}"
        word = "follow" if r.spearman_lo > 0 else "reverse" if r.spearman_hi < 0 else "unknown"
        groups[word].append(text)
    said = {
        "follow": "follow the truth (their 95 % interval above 0)",
        "reverse": "reverse it (interval below 0)",
        "unknown": "cannot be told from no agreement (interval across 0)",
        "none": "have no value here (the table says why)",
    }
    parts = [f"{len(names)} {said[k]}: {'; '.join(names)}" for k, names in groups.items() if names]
    if not parts:
        return []
    return [
        "**The answer.** On the models that learned, over the settings whose truth orders the methods reliably, of "
        f"{len(summary)} verdicts (mean Spearman ρ with the truth across settings [95 % CI]): "
        + ". ".join(parts)
        + ".",
        "",
    ]


def validity_markdown(summary: pd.DataFrame) -> str:
    table = pd.DataFrame(
        {
            "verdict": summary["verdict"],
            "data": summary["kind"].map({"tabular": "tables", "image": "images"}).fillna(summary["kind"]),
            "model": summary["model"].replace("", "–"),
            "settings": [_settings_text(r) for r in summary.itertuples()],
            "mean Spearman ρ [95 % CI]": [
                ci_text(r.spearman, r.spearman_lo, r.spearman_hi, "+") for r in summary.itertuples()
            ],
            "half-width": summary["half_width"].map(lambda v: "–" if pd.isna(v) else f"{v:.2f}"),
            "mean Kendall τ": summary["kendall"].map(lambda v: "–" if pd.isna(v) else f"{v:+.2f}"),
            "mean ρ corrected ᶜ": summary["spearman_corrected"].map(lambda v: "–" if pd.isna(v) else f"{v:+.2f}"),
            "ladder ρ [95 % CI]": [ci_text(r.ladder, r.ladder_lo, r.ladder_hi, "+") for r in summary.itertuples()],
            "reliability α [95 % CI]": [ci_text(r.alpha, r.alpha_lo, r.alpha_hi, "+") for r in summary.itertuples()],
            "internal consistency ρ [95 % CI]": [
                ci_text(r.consistency, r.consistency_lo, r.consistency_hi, "+") for r in summary.itertuples()
            ],
            "meta-consistency MC [95 % CI]": [ci_text(r.mc, r.mc_lo, r.mc_hi) for r in summary.itertuples()],
            "why no value": summary["reason"].fillna(""),
        }
    )
    return table.to_markdown(index=False, disable_numparse=True)


#: The half-width of a mean agreement's interval the study aims at (issue 34): narrower tells verdicts apart.
TARGET_HALF_WIDTH = 0.15


def precision_lines(summary: pd.DataFrame) -> list[str]:
    """How many verdicts' intervals are as narrow as :data:`TARGET_HALF_WIDTH`, naming the wider ones."""
    measured = summary[summary["half_width"].notna()]
    if measured.empty:
        return []
    wide = measured[measured["half_width"] > TARGET_HALF_WIDTH]
    names = "; ".join(f"{r.verdict} ({r.model or 'no model'}, ±{r.half_width:.2f})" for r in wide.itertuples())
    return [
        f"**Precision.** {len(measured) - len(wide)} of {len(measured)} verdicts' mean agreement is known to "
        f"±{TARGET_HALF_WIDTH:g} or better"
        + (f"; wider: {names}. More settings or seeds narrow them." if len(wide) else "."),
        "",
    ]


def predicts_lines(predicts: dict[str, dict[str, float]]) -> list[str]:
    """Whether reliability predicts validity, one sentence per measure of reliability with 3 verdicts or more."""
    lines = []
    for value, what in RELIABILITY_MEASURES.items():
        found = predicts[value]
        if not found["n"] >= 3 or pd.isna(found["rho"]):
            continue
        interval = "" if pd.isna(found["lo"]) else f" [{found['lo']:+.2f}, {found['hi']:+.2f}]"
        word = "predicts" if found["lo"] > 0 else "runs against" if found["hi"] < 0 else "does not measurably predict"
        lines.append(
            f"across the {int(found['n'])} verdicts (per data kind and model) with both, Spearman's ρ between a "
            f"verdict's {what} and its agreement with the truth is {found['rho']:+.2f}{interval} (95 % bootstrap "
            f"over verdicts): {what} {word} validity here"
        )
    if not lines:
        return []
    text = "; ".join(lines)
    return [f"**Does reliability predict validity?** {text[0].upper()}{text[1:]}.", ""]


def trust_lines(validity: VerdictValidity, figure: FigureHook, *, prefix: str) -> list[str]:
    """Which verdict to trust, as Markdown lines (without a heading): every verdict beside the ground truth across
    settings and per setting, on models that learned and, apart, on those that did not, with its reliability.

    ``figure(enabled, name, alt, draw)`` adds a figure drawn by ``draw()`` and returns its Markdown (nothing when not
    ``enabled``); the figures are named ``{prefix}_reliability.png`` and ``{prefix}_validity.png``.
    """
    from synthbench.report import figures

    if validity.empty:
        return []
    summary = validity.summary.sort_values(
        ["kind", "model", "spearman"], ascending=[True, True, False], na_position="last"
    )
    learned, apart = summary[~summary["apart"].astype(bool)], summary[summary["apart"].astype(bool)]
    md = [
        *answer_lines(learned),
        validity_markdown(learned),
        "",
        "**How it is measured.** Every verdict in this store set beside the ground truth on the same cells: in each "
        "setting (a dataset at a "
        "decoy count, one explained model) the rank correlation between the verdict's ordering of the methods (its "
        "headline metric, fold means) and the ground truth's (+1: the same order; 0: unrelated; below 0: "
        "reversed), controls left out, only the methods the verdict can judge (a check of how maps depend on the "
        "model's parameters ranks only methods that read a model), and one ordering per explained model. The truth "
        "metric of a setting is the first of "
        + ", ".join(f"`{m}`" for m in TRUTH_METRICS["tabular"])
        + " (tables) or "
        + ", ".join(f"`{m}`" for m in TRUTH_METRICS["image"])
        + f" (images) whose method means span at least {MIN_TRUTH_SPREAD:g}; where none does, the truth does not "
        "separate the methods and there is no agreement to measure. The truth's own ordering must also be "
        "reproducible: a setting enters a verdict's mean only where the truth orders the methods alike in any half "
        "of the folds as in the other (split-half reliability, Spearman-Brown stepped up to all the folds, at least "
        f"{MIN_TRUTH_RELIABILITY:g}); the settings below are counted as *truth unreliable* and listed below with "
        "their value. ᶜ marks the agreement corrected for attenuation (Spearman 1904: ρ / √(r_truth · r_verdict), "
        "each r the split-half reliability of that ordering): what the agreement would be between orderings "
        "measured without fold noise, an estimate that may exceed 1. Across settings: the mean ρ with a 95 % "
        "hierarchical bootstrap interval (settings resampled, then the folds within each). The ladder ρ is a second "
        "validity that needs no truth: where the store holds the ladder's rungs (one method's maps with 0, 25, 50 "
        "and 75 % of one seeded random map, and the random control, all noise), the rank correlation between the "
        "verdict's ordering of the rungs and their known order (less noise first), averaged over settings the "
        "same way. A verdict whose interval "
        "holds 0 says nothing, on this data, about which method recovers what drives the label. Reliability, "
        "without the truth (Tomsett et al. 2020): Krippendorff's α (ordinal) of the methods' rankings across the "
        "explained examples, each example ranking the methods by the verdict's value on it, per fold, averaged "
        "the same way (1: every example orders the methods alike; 0: no more than chance). Meta-consistency "
        "(Hedström et al. 2023, MetaQuantus), where the store holds a `meta_consistency` scorer judging the verdict: "
        "the mean of its four criteria (resilience to minor model or input noise, IAC and IEC, and reactivity to "
        "disruptive noise, IAC and IEC), each 0 to 1, 1 ideal.",
        "",
        *precision_lines(learned),
        *predicts_lines(validity.predicts),
        *figure(
            any(learned[v].notna().any() for v in RELIABILITY_MEASURES) and learned["spearman"].notna().any(),
            f"{prefix}_reliability.png",
            "each verdict's reliability against its validity",
            lambda: figures.reliability_validity(learned),
        ),
        *figure(
            not validity.settings.empty,
            f"{prefix}_validity.png",
            "each verdict's agreement with the truth per setting",
            lambda: figures.validity_heatmap(validity.settings),
        ),
    ]
    if not apart.empty:
        md += [
            "**On models that did not learn** (folds whose explained model fell below the competence threshold; "
            "kept out of the table above): does a verdict's agreement with the truth survive a model that learned "
            "nothing?",
            "",
            validity_markdown(apart),
            "",
        ]
    return (
        md
        + tests_lines(validity.tests)
        + options_lines(validity.options)
        + truth_reliability_lines(validity.settings)
        + per_setting_lines(validity.settings)
    )


def truth_reliability_lines(per_setting: pd.DataFrame) -> list[str]:
    """The truth's own reliability per setting and explained model, as a table (none without a setting): the truth
    metric, the methods and folds it orders, the range of their means and the split-half reliability of its
    ordering, and whether the setting enters the verdicts' means."""
    if per_setting.empty:
        return []
    truth = per_setting.sort_values("methods", ascending=False, kind="stable").drop_duplicates(
        ["setting", "n_decoys", "model", "apart"]
    )
    truth = truth.sort_values(["setting", "n_decoys", "model"], kind="stable")
    table = pd.DataFrame(
        {
            "setting": [
                tables.setting_label(s, d) + (" †" if a else "")
                for s, d, a in zip(truth["setting"], truth["n_decoys"], truth["apart"])
            ],
            "model": truth["model"].replace("", "–"),
            "truth metric": truth["truth_metric"].map(lambda m: f"`{m}`"),
            "methods": truth["methods"],
            "folds": truth["folds"],
            "truth spread": truth["truth_spread"].map(lambda v: "–" if pd.isna(v) else f"{v:.2f}"),
            "split-half reliability": truth["truth_split_half"].map(lambda v: "–" if pd.isna(v) else f"{v:+.2f}"),
            "enters the means": [
                "yes" if r >= MIN_TRUTH_RELIABILITY and not a else "no"
                for r, a in zip(truth["truth_split_half"].fillna(-np.inf), truth["apart"])
            ],
        }
    )
    return [
        "**The truth's own reliability** per setting and explained model (the split-half reliability of its "
        f"ordering of the methods, Spearman-Brown; a setting enters the verdicts' means at {MIN_TRUTH_RELIABILITY:g} "
        "or above, on a model that learned):",
        "",
        table.to_markdown(index=False, disable_numparse=True),
        "",
    ]


def per_setting_lines(per_setting: pd.DataFrame) -> list[str]:
    """The agreement of every verdict per setting, as a table (none without a setting)."""
    if per_setting.empty:
        return []
    table = pd.DataFrame(
        {
            "setting": [
                tables.setting_label(s, d) + (" †" if a else "") + ("" if r >= MIN_TRUTH_RELIABILITY else " ‡")
                for s, d, a, r in zip(
                    per_setting["setting"],
                    per_setting["n_decoys"],
                    per_setting["apart"],
                    per_setting["truth_split_half"].fillna(-np.inf),
                )
            ],
            "model": per_setting["model"].replace("", "–"),
            "verdict": per_setting["verdict"],
            "truth metric": per_setting["truth_metric"].map(lambda m: f"`{m}`"),
            "truth spread": per_setting["truth_spread"].map(lambda v: "–" if pd.isna(v) else f"{v:.2f}"),
            "methods": per_setting["methods"],
            "folds": per_setting["folds"],
            "rho": per_setting["spearman"],
            "Spearman ρ [95 % CI]": [
                ci_text(r.spearman, r.spearman_lo, r.spearman_hi, "+") for r in per_setting.itertuples()
            ],
            "Kendall τ": per_setting["kendall"].map(lambda v: "–" if pd.isna(v) else f"{v:+.2f}"),
            "verdict split-half": per_setting["verdict_split_half"].map(lambda v: "–" if pd.isna(v) else f"{v:+.2f}"),
            "ρ corrected ᶜ": per_setting["spearman_corrected"].map(lambda v: "–" if pd.isna(v) else f"{v:+.2f}"),
            "methods ranked": [", ".join(m) for m in per_setting["ranked"]],
        }
    ).sort_values(["setting", "model", "rho"], ascending=[True, True, False], na_position="last")
    return [
        "**Per setting** (interval: percentile bootstrap over the setting's folds; † a model that did not learn; ‡ the "
        f"truth's ordering below a split-half reliability of {MIN_TRUTH_RELIABILITY:g}, left out of the means; the "
        "truth spread is the range of the ranked methods' truth means; ᶜ corrected for attenuation):",
        "",
        table.drop(columns="rho").to_markdown(index=False, disable_numparse=True),
        "",
    ]


def tests_lines(tests: pd.DataFrame, alpha: float = 0.05) -> list[str]:
    """Which verdicts the paired tests tell apart, one sentence per data kind and model."""
    if tests.empty:
        return []
    lines = []
    for (kind, model), g in tests.groupby(["kind", "model"], sort=False):
        tested = g[g["p_holm"].notna()]
        apart = tested[tested["p_holm"] < alpha]
        where = f"{tables.data_word(kind)}, {model or 'no model'}"
        if tested.empty:
            lines.append(f"- {where}: no pair of verdicts shares two settings with an agreement; nothing to test.")
            continue
        found = "; ".join(
            f"{r.verdict} above {r.other} (Δρ {r.difference:+.2f} over {r.settings} settings, p = {r.p_holm:.2g})"
            for r in apart.itertuples()
        )
        lines.append(
            f"- {where}: {len(apart)} of {len(tested)} pairs of verdicts told apart" + (f": {found}." if found else ".")
        )
    return [
        "**Which verdicts can be told apart** (paired Wilcoxon signed-rank test of the per-setting ρ over the "
        f"settings both measured, Holm-corrected within each data kind and model, α = {alpha}):",
        "",
        *lines,
        "",
    ]


def options_lines(options: pd.DataFrame) -> list[str]:
    """Whether each verdict's validity moves with its own settings, as a table (none where no verdict ran at
    several)."""
    if options.empty:
        return []
    table = pd.DataFrame(
        {
            "verdict": options["verdict"],
            "data": options["kind"].map(tables.data_word),
            "model": options["model"].replace("", "–"),
            "setting A": options["base"].map(lambda v: f"`{v}`" if v else "defaults"),
            "ρ A [95 % CI]": [ci_text(r.base_rho, r.base_lo, r.base_hi, "+") for r in options.itertuples()],
            "setting B": options["option"].map(lambda v: f"`{v}`" if v else "defaults"),
            "ρ B [95 % CI]": [ci_text(r.rho, r.lo, r.hi, "+") for r in options.itertuples()],
            "Δρ (B − A), settings, p": [
                "–"
                if pd.isna(r.difference)
                else f"{r.difference:+.2f}, {r.settings}, " + ("–" if pd.isna(r.p) else f"p = {r.p:.2g}")
                for r in options.itertuples()
            ],
            "moves beyond its interval": options["moves"].map({True: "yes", False: "no"}),
        }
    )
    moved = int(options["moves"].sum())
    return [
        "**Does the answer depend on the verdict's own settings?** Each verdict that ran at two settings of its "
        "options, its mean agreement with the truth at each (models that learned, settings whose truth is "
        "reliable), the paired difference over the settings both measured (Wilcoxon signed-rank p), and whether "
        f"either mean lies outside the other's interval: {moved} of {len(options)} move.",
        "",
        table.to_markdown(index=False, disable_numparse=True),
        "",
    ]
