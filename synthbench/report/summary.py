"""What the store says, in a few sentences written from its numbers: the report's opening section.

For every part judged against the truth, per setting: the best method with its 95 % interval, the
methods a paired test cannot tell apart from it, and how many are significantly below. Then
where the explained models fell below the competence threshold (where nothing can be said about
the methods that explain them), how each verdict in the store agrees with the ground truth, and the run's size and
cost (the shared models' training apart from the methods' own time). Every number links to the
table it comes from (:meth:`~synthbench.report.parts.Part.anchor`).

Significance: the best method (by mean) against each other one, a paired t-test over the cells
both finished (same decoy count, seed and fold; ``scipy.stats.ttest_rel``), Holm-corrected over
the comparisons of the setting. Fewer than two shared cells cannot be tested, and counts as "not
told apart".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from synthbench.kinds import INPUT_KINDS, get_kind
from synthbench.report import tables
from synthbench.report.parts import Part, headline, method_link, store_parts
from synthbench.report.results import Results
from synthbench.report.study.validity import holm
from synthbench.report.study.verdicts import VerdictValidity, verdict_validity
from synthbench.runner.competence import learnability

__all__ = ["store_summary", "summary_lines", "Leaders", "leaders", "duration", "used_runs", "wall_seconds"]

#: The most methods a summary sentence names before "and N more".
NAMED = 3


@dataclass(frozen=True)
class Leaders:
    """The best method of a setting and those a paired test cannot tell apart from it.

    ``table`` is :func:`~synthbench.report.tables.summary_table` of the setting (best first);
    ``best`` its first row's method; ``tied`` the methods whose Holm-corrected p-value against it is
    at least ``alpha`` (or that share fewer than two cells with it), in table order; ``below`` how many
    methods with a mean are significantly worse; ``p`` the corrected p-value of each compared method.
    """

    table: pd.DataFrame
    metric: str
    best: str
    tied: list[str]
    below: int
    p: dict[str, float]


def leaders(results: Results, metric: str, setting: str, *, alpha: float = 0.05) -> Leaders | None:
    """The best method of ``setting`` on ``metric`` and the methods not significantly apart from it; None when
    no method has a value there."""
    from scipy import stats

    table = tables.summary_table(results, metrics=(metric,), setting=setting).dropna(subset=[metric])
    if table.empty:
        return None
    best = str(table.index[0])
    sel = results.scores[(results.scores["metric"] == metric) & (results.scores["setting"] == setting)]
    wide = sel.assign(n_decoys=sel["n_decoys"].fillna(-1)).pivot_table(
        index=["n_decoys", "seed", "fold"], columns="method", values="value", aggfunc="mean"
    )
    raw = {}
    for method in table.index[1:]:
        both = wide[[best, method]].dropna()
        diff = (both[method] - both[best]).to_numpy()
        if len(both) < 2:
            raw[method] = 1.0
        elif np.allclose(diff, diff[0]):  # a constant difference: no variance to test (zero: the same values)
            raw[method] = 1.0 if diff[0] == 0 else 0.0
        else:
            raw[method] = float(stats.ttest_rel(both[method], both[best]).pvalue)
    p = holm(raw)
    tied = [m for m in table.index[1:] if p[m] >= alpha]
    return Leaders(table, metric, best, tied, len(table) - 1 - len(tied), p)


def duration(seconds: float) -> str:
    """``1 h 05 min``, ``3 min 07 s`` or ``4.2 s``."""
    if seconds < 60:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    h, rest = divmod(int(round(seconds)), 3600)
    return f"{h} h {rest // 60:02d} min" if h else f"{rest // 60} min {rest % 60:02d} s"


def used_runs(results: Results) -> pd.DataFrame:
    """The runs that wrote the cells of ``results`` (empty for a store written before runs were recorded)."""
    return (
        results.runs[results.runs["run_id"].isin(results.cells["run_id"].dropna())]
        if not results.runs.empty
        else results.runs
    )


def wall_seconds(runs: pd.DataFrame) -> float:
    """The wall time of ``runs``; a run that never recorded its end (its process was killed) counts from its
    start to its last stored cell."""
    elapsed = (pd.to_datetime(runs["last_cell_at"]) - pd.to_datetime(runs["started_at"])).dt.total_seconds().fillna(0)
    return float(runs["wall_seconds"].where(runs["wall_seconds"].notna(), elapsed).sum())


def _value(table: pd.DataFrame, method: str, metric: str, link: str) -> str:
    r = table.loc[method]
    interval = "" if pd.isna(r[f"{metric}_lo"]) else f" [{r[f'{metric}_lo']:.2f}, {r[f'{metric}_hi']:.2f}]"
    return f"[{r[metric]:.2f}{interval}](#{link})"


def _names(items: list[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


def _setting_sentence(part: Part, found: Leaders, setting: str, alpha: float) -> str:
    link = part.anchor("setting", setting)
    t, metric = found.table, found.metric
    cells = int(t.loc[found.best, "cells"])
    lead = _value(t, found.best, metric, link)
    head = f"**{setting}** ({cells} cells per method): {method_link(found.best)} leads with {lead}"
    if not found.tied:
        return head + ("; it is significantly ahead of every other method" if found.below else "") + "."
    shown = [f"{method_link(m)} {_value(t, m, metric, link)}" for m in found.tied[:NAMED]]
    more = len(found.tied) - len(shown)
    shown += [f"{more} more"] if more else []
    rest = f"; {found.below} other{' is' if found.below == 1 else 's are'} significantly below" if found.below else ""
    return (
        f"{head}; not significantly apart from it (paired t-test over folds, Holm, α = {alpha}): {_names(shown)}{rest}."
    )


def _unlearnable_sentence(part: Part) -> str:
    """The settings no model learns at their sample size, and the smallest sample size of the store where one does."""
    fits = tables.model_fits(part.results)
    if fits.empty:
        return ""
    threshold = part.results.competence_threshold
    table = learnability(fits, threshold)
    table = table[table["learnable"] == False]  # noqa: E712 - None is unknown
    if table.empty:
        return ""
    where = []
    for r in table.itertuples():
        at = (
            f"learnt at n = {int(r.learnable_at)}" if np.isfinite(r.learnable_at) else "at no sample size of this store"
        )
        decoys = f"/{r.n_decoys}" if r.n_decoys >= 0 else ""
        where.append(
            f"{r.dataset}{decoys} at n = {r.n_samples} (best: `{r.best_model}` at competence "
            f"[{r.best_competence:.2f}](#{part.anchor('models')}); {at})"
        )
    return (
        f"**Not learnable at this sample size:** {_names(where)}: no model of this store reaches a competence of "
        f"{threshold:g} there, so no method can be judged on it; a larger `--n-samples` (or a model kind that "
        "learns it) is where the question becomes answerable."
    )


def _incompetent_sentence(part: Part) -> str:
    models = tables.model_table(part.results)
    if models.empty:
        return ""
    link = part.anchor("models")
    threshold = part.results.competence_threshold
    near = models[models["incompetent"] > 0]
    if near.empty:
        known = models.dropna(subset=["competence"])
        if known.empty:
            return (
                "No explained model's competence is known here (no fold records a learnability ceiling: the data "
                "have neither relevant columns nor a Bayes accuracy, or the cells predate ceilings)."
            )
        worst = known.loc[known["competence"].idxmin()]
        return (
            f"Every explained model learned what the data allow: no fit fell below a competence of {threshold:g} "
            f"(lowest mean [{worst['competence']:.2f}](#{link}), `{worst['model']}` on "
            f"{tables.setting_label(worst['setting'], int(worst['n_decoys']))})."
        )
    where = []
    for model, g in models.groupby("model", sort=False):
        bad = g[g["incompetent"] > 0]
        if bad.empty:
            continue
        label = [tables.setting_label(r.setting, int(r.n_decoys)) for r in bad.itertuples()]
        every = [x for x, r in zip(label, bad.itertuples()) if r.incompetent == r.models]
        some = [x for x, r in zip(label, bad.itertuples()) if r.incompetent < r.models]
        detail = "; ".join(
            filter(
                None,
                (f"every fit on {', '.join(every)}" if every else "", f"some on {', '.join(some)}" if some else ""),
            )
        )
        where.append(f"`{model}` on [{bad['incompetent'].sum()} of {g['models'].sum()}](#{link}) fits ({detail})")
    fate = (
        "averaged in on request: marked † in the tables, hatched in the overview"
        if part.results.all_models
        else "left out of every mean and ordering here"
    )
    return (
        f"**Did not learn, nothing to say:** {_names(where)} fell below a competence of {threshold:g} "
        "((accuracy − chance) / (learnability ceiling − chance) on held-out rows); the cells that explain those "
        f"fits are {fate}, since they say more about the model than about the method."
    )


def _verdict_sentences(validity: VerdictValidity) -> list[str]:
    if validity.empty:
        return []
    summary = validity.summary[~validity.summary["apart"].astype(bool)]
    several = summary[["kind", "model"]].drop_duplicates().shape[0] > 1
    lines = []
    for r in summary.itertuples():
        where = f" ({tables.data_word(r.kind)}, {r.model or 'no model'})" if several else ""
        if not r.settings:
            lines.append(f"- {r.verdict}{where}: [{r.reason}](#trust).")
            continue
        word = (
            "agrees with"
            if r.spearman_lo > 0
            else "reverses"
            if r.spearman_hi < 0
            else "cannot be told from no agreement with"
        )
        value = f"{r.spearman:+.2f}" + (
            "" if pd.isna(r.spearman_lo) else f" [{r.spearman_lo:+.2f}, {r.spearman_hi:+.2f}]"
        )
        alpha = "" if pd.isna(r.alpha) else f"; reliability across examples α [{r.alpha:+.2f}](#trust)"
        left = "" if pd.isna(r.unreliable) or not r.unreliable else f" ({int(r.unreliable)} left out: truth unreliable)"
        lines.append(
            f"- {r.verdict}{where} {word} the ground truth: mean rank correlation ρ [{value}](#trust) over "
            f"{r.settings} of {r.of} settings{left}{alpha}."
        )
    return [
        "**Which verdict to trust.** Each verdict's ordering of the methods against the ground truth's on the "
        "same cells (Spearman ρ per setting, its mean with a 95 % hierarchical bootstrap interval over settings and "
        "folds, controls left out, models that did not learn kept apart, settings whose truth orders the methods "
        "unreliably across folds left out):",
        "",
        *lines,
        "",
    ]


def _count_word(results: Results) -> str:
    """What the decoy axis counts: decoy features (tables), distractor glyphs (images), or both."""
    present = set(results.cells["kind"])
    return "/".join(dict.fromkeys(get_kind(k).decoy for k in INPUT_KINDS.names() if k in present))


def _cost_sentence(results: Results, parts: list[Part]) -> str:
    cells = results.cells
    status = cells["status"].value_counts()
    ok = cells[cells["status"] == "ok"]
    fits = tables.model_fits(results)
    runs = used_runs(results)
    wall = (
        f"{duration(wall_seconds(runs))} of wall time over {len(runs)} run(s)"
        if len(runs)
        else "wall time not recorded"
    )
    decoys = sorted(int(d) for d in cells["n_decoys"].dropna().unique())
    size = (
        f"{len(cells)} cells ({status.get('ok', 0)} finished, {status.get('failed', 0)} failed, "
        f"{status.get('skipped', 0)} skipped, {len(results.missing())} missing) of {len(results.methods)} method "
        f"entries on {len(results.settings)} dataset setting(s)"
        + (f" × {len(decoys)} {_count_word(results)} count(s) ({', '.join(map(str, decoys))})" if decoys else "")
        + f", {cells['n_folds'].max()} folds × {cells['seed'].nunique()} seed(s); {wall}"
    )
    cost_link = next((p.anchor("cost") for p in parts if p.is_truth and p.kind == "tabular"), "provenance")
    text = f"**The run.** [{size}](#provenance)."
    if not fits.empty:
        per_model = fits.groupby("model", sort=False)["train_seconds"].mean()
        each = _names([f"`{model}` {duration(s)}" for model, s in per_model.items()])
        text += (
            f" Training the shared models took [{duration(fits['train_seconds'].sum())}](#{cost_link}) "
            f"({len(fits)} fits, once per fold and preset; per fit {each}), the methods' own time "
            f"[{duration(ok['method_seconds'].sum())}](#{cost_link})"
        )
    else:
        text += f" The methods' own time: [{duration(ok['method_seconds'].sum())}](#{cost_link})"
    scorer = ok["scorer_seconds"].fillna(0).sum() if "scorer_seconds" in ok else 0.0
    return text + (f" and the scorers' [{duration(scorer)}](#provenance)." if scorer >= 1 else ".")


def summary_lines(
    results: Results,
    parts: list[Part],
    *,
    metrics: tuple[str, ...] = ("best_k", "best_2k"),
    alpha: float = 0.05,
    validity: VerdictValidity | None = None,
) -> list[str]:
    """The summary as Markdown lines (the report's opening section, without its heading); ``validity`` is
    :func:`~synthbench.report.study.verdicts.verdict_validity` of ``parts``, computed here when not given."""
    md = []
    for part in parts:
        metric = headline(part, metrics)
        if not part.is_truth or metric is None:
            continue
        what = part.results.metric(metric, part.scorer).description
        same_kind = sum(other.is_truth and other.kind == part.kind for other in parts) > 1
        heading = (
            f" ({part.label})"
            if same_kind
            else " on images"
            if part.kind == "image"
            else " on tables"
            if part.label
            else ""
        )
        sentences = []
        for setting in part.results.settings:
            found = leaders(part.results, metric, setting, alpha=alpha)
            if found is not None:
                sentences.append(f"- {_setting_sentence(part, found, setting, alpha)}")
        md += [
            f"**Best methods{heading}** on `{metric}` (the {what}; mean over the setting's cells with its 95 % "
            "interval):",
            "",
            *sentences,
            "",
        ]
        for sentence in (_incompetent_sentence(part), _unlearnable_sentence(part)):
            md += [sentence, ""] if sentence else []
    md += _verdict_sentences(validity if validity is not None else verdict_validity(parts))
    md += [_cost_sentence(results, parts), ""]
    return md


def store_summary(results: Results, *, metrics: tuple[str, ...] = ("best_k", "best_2k"), alpha: float = 0.05) -> str:
    """What the store says, as Markdown (the report's opening section): in a notebook,
    ``IPython.display.Markdown(store_summary(results))``. Its links point into the HTML report."""
    return "\n".join(summary_lines(results, store_parts(results), metrics=metrics, alpha=alpha))
