"""Frozen suites: versioned TOML files that say exactly what to run.

A suite file has top-level ``name``, ``version``, ``description``, ``n_samples``, ``folds``,
``seed`` (or ``seeds``, a list: every block runs at each), ``explain`` (``test`` or ``train``, or either with
``:N`` for its first N rows: :func:`~synthbench.protocol.explained_part`),
``methods`` (registered names) and optional ``models`` (the presets the neural methods explain;
default ``passemiers2023_corrected`` for tables, ``cnn`` for images), ``scorers`` (default
``["ground_truth"]``) and ``scorer_options`` (a table: each option goes to every scorer taking it),
then one or more ``[[grid]]`` blocks, each with ``datasets`` and either ``n_features`` (total feature
counts ``m``: the dataset's ``k`` relevant features plus ``m - k`` decoys) or ``n_decoys``, and
optional ``params`` (dataset parameters) and its own ``n_samples``, ``seeds``, ``explain``, ``methods``, ``models``,
``scorers`` and ``scorer_options``, replacing the top-level ones (a block's ``seeds`` must be among the suite's).
A key the format does not know is refused, at the top level and in a block.
``passemiers2023.toml`` ships with the package; users pass their own files by path.

The suite's hash (SHA-256 of its parsed content, canonical JSON) enters every cell's id and is
stored with every result, so editing a suite never silently mixes its numbers with the old ones.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from synthbench import datasets
from synthbench.methods import method_names
from synthbench.models.presets import DEFAULT_PRESET, preset_names
from synthbench.protocol import explained_part
from synthbench.runner.grid import Cell, GridSpec
from synthbench.scoring import scorer_names, scorer_options

__all__ = ["Suite", "SuiteError", "load_suite", "suite_names"]

_REQUIRED = {
    "name": str,
    "version": int,
    "description": str,
    "n_samples": int,
    "folds": int,
    "methods": list,
    "grid": list,
}


#: What a suite file's top level may hold beyond :data:`_REQUIRED`, and what a ``[[grid]]`` block may hold: anything
#: else is refused (a misspelt key would otherwise be silently ignored).
_OPTIONAL = {"seed", "seeds", "explain", "models", "scorers", "scorer_options"}
_BLOCK_KEYS = {
    "datasets",
    "n_features",
    "n_decoys",
    "params",
    "n_samples",
    "seeds",
    "explain",
    "methods",
    "models",
    "scorers",
    "scorer_options",
}


class SuiteError(Exception):
    """A suite that cannot be found or is malformed; the message says which field is wrong."""


@dataclass(frozen=True)
class Suite:
    """A parsed suite: its grids (one :class:`GridSpec` per dataset block) and its identity."""

    name: str
    version: int
    description: str
    hash: str
    grids: tuple[GridSpec, ...]
    source: str

    def cells(self) -> list[Cell]:
        """Every cell of the suite once, in file order, each carrying the suite's name and hash (blocks may overlap:
        a control judged on its default model in two blocks is one cell)."""
        return list({c.cell_id: c for g in self.grids for c in g.cells()}.values())


def suite_names() -> list[str]:
    """Suites shipped with the package."""
    return sorted(p.name[: -len(".toml")] for p in resources.files(__name__).iterdir() if p.name.endswith(".toml"))


def load_suite(name_or_path: str | Path) -> Suite:
    """A shipped suite by name (see :func:`suite_names`) or a suite file by path."""
    text, source = _read(str(name_or_path))
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SuiteError(f"suite {source} is not valid TOML: {exc}") from None
    return _parse(raw, source)


def _read(name_or_path: str) -> tuple[str, str]:
    if name_or_path in suite_names():
        return resources.files(__name__).joinpath(f"{name_or_path}.toml").read_text(encoding="utf-8"), name_or_path
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except OSError as exc:
            raise SuiteError(f"cannot read suite file {path}: {exc.strerror}") from None
    raise SuiteError(
        f"unknown suite {name_or_path!r}; shipped suites: {', '.join(suite_names())} (or a path to a .toml file)"
    )


def _parse(raw: dict[str, Any], source: str) -> Suite:
    for key, kind in _REQUIRED.items():
        if not isinstance(raw.get(key), kind) or isinstance(raw.get(key), bool):
            raise SuiteError(f"suite {source}: {key!r} must be a {kind.__name__}")
    _known(raw, set(_REQUIRED) | _OPTIONAL, f"suite {source}")
    explain = _explain(raw, "test", f"suite {source}")
    _seeds(raw, f"suite {source}")
    _run_settings(raw, raw, f"suite {source}")
    if raw["folds"] < 2 or raw["n_samples"] < raw["folds"]:
        raise SuiteError(f"suite {source}: need folds >= 2 and n_samples >= folds")
    digest = hashlib.sha256(json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
    grids = tuple(
        grid
        for i, block in enumerate(raw["grid"])
        for grid in _block_grids(block, raw, explain, digest, f"suite {source}: grid block {i + 1}")
    )
    if not grids:
        raise SuiteError(f"suite {source}: no [[grid]] blocks")
    return Suite(raw["name"], raw["version"], raw["description"], digest, grids, source)


def _known(table: dict[str, Any], keys: set[str], where: str) -> None:
    """SuiteError naming the keys of ``table`` that are not among ``keys``."""
    stray = sorted(set(table) - keys)
    if stray:
        raise SuiteError(f"{where}: unknown key(s) {', '.join(map(repr, stray))}; valid: {', '.join(sorted(keys))}")


def _explain(table: dict[str, Any], default: str, where: str) -> str:
    """The rows the methods explain, ``table``'s own ``explain`` or ``default``
    (:func:`~synthbench.protocol.explained_part`)."""
    explain = table.get("explain", default)
    try:
        explained_part(explain)
    except (ValueError, AttributeError) as exc:
        raise SuiteError(f"{where}: {exc}") from None
    return str(explain)


def _seeds(raw: dict[str, Any], where: str) -> tuple[int, ...]:
    """The suite's data seeds: ``seed``, or the list ``seeds`` (exactly one of them), non-negative integers."""
    if ("seed" in raw) == ("seeds" in raw):
        raise SuiteError(f"{where}: give exactly one of 'seed' and 'seeds'")
    seeds = [raw["seed"]] if "seed" in raw else raw["seeds"]
    if not isinstance(seeds, list) or not seeds or any(type(s) is not int or s < 0 for s in seeds):
        raise SuiteError(f"{where}: seeds must be non-negative integers, 'seeds' a non-empty list")
    if len(set(seeds)) < len(seeds):
        raise SuiteError(f"{where}: 'seeds' repeats a seed")
    return tuple(seeds)


def _block_seeds(block: dict[str, Any], raw: dict[str, Any], where: str) -> tuple[int, ...]:
    """A block's own ``seeds`` (a subset of the suite's: a costly verdict run at fewer seeds) or the suite's."""
    suite = _seeds(raw, where)
    if "seeds" not in block:
        return suite
    own = _seeds({"seeds": block["seeds"]}, where)
    if not set(own) <= set(suite):
        raise SuiteError(f"{where}: the block's seeds {list(own)} must be among the suite's {list(suite)}")
    return own


def _run_settings(
    block: dict[str, Any], raw: dict[str, Any], where: str
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], dict[str, Any]]:
    """A block's ``methods``, ``models`` (presets), ``scorers`` and ``scorer_options``, each its own or the
    suite's (``raw``), checked against the registries."""
    methods = block.get("methods", raw["methods"])
    if not isinstance(methods, list) or not methods:
        raise SuiteError(f"{where}: 'methods' must be a non-empty list")
    unknown = [m for m in methods if m not in method_names()]
    if unknown:
        raise SuiteError(f"{where}: unknown methods {', '.join(map(repr, unknown))}")
    models = block.get("models", raw.get("models", [DEFAULT_PRESET]))
    if not isinstance(models, list) or not models or any(m not in preset_names() for m in models):
        raise SuiteError(f"{where}: 'models' must be a non-empty list of presets; valid: {', '.join(preset_names())}")
    scorers = block.get("scorers", raw.get("scorers", ["ground_truth"]))
    if not isinstance(scorers, list) or not scorers or any(s not in scorer_names() for s in scorers):
        raise SuiteError(f"{where}: 'scorers' must be a non-empty list of scorers; valid: {', '.join(scorer_names())}")
    options = block.get("scorer_options", raw.get("scorer_options", {}))
    if not isinstance(options, dict):
        raise SuiteError(f"{where}: 'scorer_options' must be a table")
    stray = sorted(set(options) - {o for s in scorers for o in scorer_options(s)})
    if stray:
        raise SuiteError(f"{where}: no scorer of {', '.join(scorers)} takes the option(s) {', '.join(stray)}")
    return tuple(methods), tuple(models), tuple(scorers), options


def _block_grids(block: dict[str, Any], raw: dict[str, Any], explain: str, digest: str, where: str) -> list[GridSpec]:
    """The grids of one ``[[grid]]`` block, one per dataset and seed; its own ``explain`` or the suite's."""
    _known(block, _BLOCK_KEYS, where)
    explain = _explain(block, explain, where)
    names = block.get("datasets")
    if not isinstance(names, list) or not names:
        raise SuiteError(f"{where}: 'datasets' must be a non-empty list")
    unknown = [d for d in names if d not in datasets.names()]
    if unknown:
        raise SuiteError(f"{where}: unknown datasets {', '.join(map(repr, unknown))}")
    if ("n_features" in block) == ("n_decoys" in block):
        raise SuiteError(f"{where}: give exactly one of 'n_features' and 'n_decoys'")
    params = block.get("params", {})
    if not isinstance(params, dict):
        raise SuiteError(f"{where}: 'params' must be a table")
    methods, models, scorers, options = _run_settings(block, raw, where)
    seeds = _block_seeds(block, raw, where)
    n_samples = block.get("n_samples", raw["n_samples"])
    if type(n_samples) is not int or n_samples < raw["folds"]:
        raise SuiteError(f"{where}: 'n_samples' must be an integer, at least the {raw['folds']} folds")
    out = []
    for name in names:
        if "n_decoys" in block or not datasets.spec(name).decoys:
            decoys = tuple(block.get("n_decoys", [0]))
        else:
            made = datasets.make(name, n_samples=n_samples, n_decoys=0, seed=seeds[0], **params)
            if made.relevant is None:
                raise SuiteError(f"{where}: n_features needs a dataset with global truth; {name} has none")
            k = int(made.relevant.sum())
            too_small = [m for m in block["n_features"] if m < k]
            if too_small:
                raise SuiteError(f"{where}: n_features {too_small} below the {k} relevant features of {name!r}")
            decoys = tuple(m - k for m in block["n_features"])
        if not decoys or any(not isinstance(d, int) or d < 0 for d in decoys):
            raise SuiteError(f"{where}: decoy counts must be non-negative integers")
        out += [
            GridSpec(
                (name,),
                methods,
                decoys,
                n_samples,
                raw["folds"],
                seed,
                explain,
                {name: params} if params else {},
                suite=(raw["name"], digest),
                models=models,
                scorers=scorers,
                scorer_options=options,
            )
            for seed in seeds
        ]
    return out
