"""The public check battery (synthbench.testing) run over every registered component, and shown to catch breakage."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from synthbench import datasets
from synthbench.methods import METHODS, MethodSpec, method_names
from synthbench.models import kinds
from synthbench.scoring import scorer_names
from synthbench.testing import CheckData, CheckFailed, check_dataset, check_method, check_model_kind, check_scorer

#: Datasets read from files need the files: their loaders are certified on tiny files in test_images.
GENERATED = [n for n in datasets.names() if datasets.spec(n).fingerprint is None]
#: Scorer options that keep a retraining scorer's check quick (one replicate, one fraction, few epochs).
QUICK = {
    "roar": {"repeats": 1, "fractions": (0.5,)},
    "kar": {"repeats": 1, "fractions": (0.5,)},
    "road": {"fractions": (0.5,)},
    "data_randomisation": {"epochs": 20, "max_epochs": 20},
    "smprt": {"noise_samples": 2},
    "fragility": {"eps": (0.1,), "iterations": 2, "search_steps": 2, "samples": 2},
    "meta_consistency": {"perturbations": 1, "verdict_options": {"fractions": (0.5,)}},
}


@pytest.fixture(scope="module")
def cache():
    return CheckData()


@pytest.mark.parametrize("name", GENERATED)
def test_every_generated_dataset_passes_check_dataset(name):
    assert "same seed, same data" in check_dataset(name)


#: Methods whose check takes a minute on two cores, kept out of the default run (``pytest -m slow`` runs
#: them): tests/test_selectors_2023.py runs each on a fold and checks what it selects. And the booster-on-every-input
#: registrations of the booster's methods but its TreeSHAP: each is its ``gbm_`` twin's function on another kind (the
#: default run checks the twins, the kind itself and ``gbm_full_treeshap``).
SLOW_CHECKS = {"lassonet_2023"} | {n for n in method_names() if n.startswith("gbm_full_") and n != "gbm_full_treeshap"}


def _fewer_epochs(monkeypatch) -> None:
    """The 2023 FSNet and concrete autoencoder train for fewer epochs (FSNet 2000 -> 30; the autoencoder's
    k- and 2k-runs 300 and 30 -> 30 and 3). The code is the same: their temperature schedules still run
    from start to end value, over fewer steps."""
    import functools

    import synthbench.methods.selectors_2023 as s23

    monkeypatch.setattr(s23, "fit_fsnet_2023", functools.partial(s23.fit_fsnet_2023, epochs=30))
    monkeypatch.setattr(s23, "CAE_RUNS", ((1, 30), (2, 3)))


def _fewer_samples(monkeypatch) -> None:
    """KernelSHAP draws 100 coalitions a row (the package's "auto": 2 p + 2048) and LIME 500 perturbations (5000):
    the same code, fewer model evaluations."""
    from synthbench.methods import agnostic

    kernel, lime = agnostic.kernel_shap_values, agnostic.lime_values
    monkeypatch.setattr(agnostic, "kernel_shap_values", lambda *a, **k: kernel(*a, **{**k, "nsamples": 100}))
    monkeypatch.setattr(agnostic, "lime_values", lambda *a, **k: lime(*a, **{**k, "num_samples": 500}))


#: Methods checked in the default run with fewer epochs or samples (every check of the battery still runs); at
#: their own settings, 5-20 s each on two cores, by test_quick_checked_methods_pass_check_method_as_registered
#: (slow).
QUICK_METHODS = {
    "fsnet_2023": _fewer_epochs,
    "concrete_autoencoder_2023": _fewer_epochs,
    **dict.fromkeys(("kernel_shap", "gbm_kernel_shap", "lime", "gbm_lime"), _fewer_samples),
}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_CHECKS else n for n in method_names()]
)
def test_every_method_passes_check_method(name, cache, monkeypatch):
    if name in QUICK_METHODS:
        QUICK_METHODS[name](monkeypatch)
    passed = check_method(name, cache=cache)
    assert any(c.endswith("same fold, same output") for c in passed)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUICK_METHODS))
def test_quick_checked_methods_pass_check_method_as_registered(name, cache):
    """The battery at the methods' own epochs; the default run's test_every_method_passes_check_method[name]
    runs the same checks through the same code with fewer epochs."""
    passed = check_method(name, cache=cache)
    assert any(c.endswith("same fold, same output") for c in passed)


@pytest.mark.parametrize("name", kinds())
def test_every_model_kind_passes_check_model_kind(name):
    passed = check_model_kind(name)
    assert "a pickle round trip keeps the predictions" in passed
    batched = "a batch trains each model as it trains alone" in passed
    assert batched == (name in ("mlp", "cnn"))  # the networks train many at once; the trees one by one


def test_check_model_kind_catches_a_batch_that_is_not_each_model_alone(cache):
    import functools

    from conftest import registrations_undone

    from synthbench.models import ModelKind, register_model
    from synthbench.models.neural import train_fold_mlp, train_folds_mlp

    train = functools.partial(train_fold_mlp, training={"max_epochs": 5})

    def reversed_batch(requests, settings, *preset, training=None):  # each model in another's place
        return train_folds_mlp(requests, settings, *preset, training={"max_epochs": 5})[::-1]

    with registrations_undone():
        register_model(ModelKind("mlp_reversed", train, "test: a batch out of order", train_many=reversed_batch))
        with pytest.raises(CheckFailed, match="a batch trains each model as it trains alone"):
            check_model_kind("mlp_reversed", data=cache.fold("tabular"))


@pytest.mark.parametrize("name", scorer_names())
def test_every_scorer_passes_check_scorer(name):
    assert "tabular: same fold, same values" in check_scorer(
        name, data=CheckData().fold("tabular"), options=QUICK.get(name)
    )


def test_check_scorer_covers_images():
    assert "image: same fold, same values" in check_scorer("ground_truth")


def test_a_scorer_derives_from_scorer_and_declares_what_it_does_as_abilities():
    """The registry takes only a :class:`Scorer` (its abilities and defaults come with the class), and the battery
    refuses abilities that are not an :class:`Abilities` or a scorer that re-draws layers it never checks."""
    from conftest import registrations_undone

    from synthbench.scoring import Abilities, GroundTruthScorer, Scorer, register_scorer

    class Bare:
        name, metrics = "bare", GroundTruthScorer().metrics

    with pytest.raises(TypeError, match="derives from synthbench.scoring.Scorer"):
        register_scorer(Bare())
    assert Scorer.abilities == Abilities() and not Abilities().judges_model  # nothing beyond scoring by default

    class Undeclared(GroundTruthScorer):
        abilities = {"judges_model": True}  # a dict, not Abilities

    class Unchecked(GroundTruthScorer):
        abilities = Abilities(randomises_layers=True)  # and no check_layers of its own

    for scorer, failing in [
        (Undeclared(name="undeclared"), "declares its abilities"),
        (Unchecked(name="unchecked"), "checks the layers it randomises"),
    ]:
        with registrations_undone():
            register_scorer(scorer)
            with pytest.raises(CheckFailed, match=failing):
                check_scorer(scorer.name, data=CheckData().fold("tabular"))


def _register(name, fn, **kw):
    return METHODS.temporarily(name, MethodSpec(name, fn, "test: " + name, **kw))


def test_check_method_catches_wrong_shapes_nan_nondeterminism_and_held_models(cache):
    fold = cache.fold("tabular")
    cases = {
        "short": (
            lambda d, m, r: np.ones(d.n_features - 1),
            "a valid output: MethodOutputError: method returned scores of shape",
        ),
        "nan": (lambda d, m, r: np.full(d.n_features, np.nan), "a valid output: ValueError: method returned NaN"),
        "drifting": (
            lambda d, m, r, s=iter(range(10**6)): np.full(d.n_features, float(next(s))),
            "same fold, same output",
        ),
    }
    for name, (fn, broken) in cases.items():
        with _register(name, fn), pytest.raises(CheckFailed, match=f"method '{name}': tabular: {broken}"):
            check_method(name, cache=cache)
    held = {}

    def holds_its_model(data, models, rng):  # keeps the first model it saw: cannot explain another
        model = held.setdefault("mlp", models.get("mlp"))
        first = next(m for m in model.module.modules() if isinstance(m, torch.nn.Linear))
        return np.abs(first.weight.detach().numpy()).sum(axis=0).astype(np.float64)

    with (
        _register("holder", holds_its_model, needs={"tabular": ("mlp",)}),
        pytest.raises(CheckFailed, match="explains the model it is handed"),
    ):
        check_method("holder", data=fold, cache=cache)
    with _register("no_description", lambda d, m, r: np.ones(d.n_features)) as spec:
        object.__setattr__(spec, "description", " ")
        with pytest.raises(CheckFailed, match="has a description"):
            check_method("no_description", data=fold, cache=cache)


def test_check_model_kind_catches_layers_that_do_not_exist_or_do_not_matter(cache):
    import functools

    from conftest import registrations_undone

    from synthbench.models import ModelKind, register_model
    from synthbench.models.mlp import initialise_linear, mlp_layers
    from synthbench.models.neural import train_fold_mlp
    from synthbench.models.randomise import Layer

    fold = cache.fold("tabular")
    broken = {
        "missing": lambda model: (Layer("99", initialise_linear),),
        "inert": lambda model: tuple(Layer(layer.name, lambda m, g: None) for layer in mlp_layers(model)),
    }
    messages = {"missing": "declares its layers, each a submodule", "inert": "re-drawing every layer changes"}
    # The MLP trained for 5 epochs at most: what the layer checks catch does not depend on how well it learnt.
    train = functools.partial(train_fold_mlp, training={"max_epochs": 5})
    for name, layers in broken.items():
        with registrations_undone():
            register_model(ModelKind(f"mlp_{name}", train, "test: the MLP with broken layers", layers=layers))
            with pytest.raises(CheckFailed, match=messages[name]):
                check_model_kind(f"mlp_{name}", data=fold)


def test_check_dataset_catches_broken_generators():
    def make_bad(broken):
        def gen(*, n_samples, n_decoys, seed):
            ds = datasets.make("xor", n_samples=n_samples, n_decoys=n_decoys, seed=0 if broken == "seed" else seed)
            if broken == "decoys":
                X = ds.X.copy()
                X[:, 0] = np.random.default_rng(n_decoys).normal(size=len(X))  # decoys move a relevant column
                return datasets.Dataset(X, ds.y, ds.relevant, None, "bad", ds.params, seed)
            if broken == "nondeterministic":
                X = ds.X + np.random.default_rng().normal(size=ds.X.shape).astype(np.float32)
                return datasets.Dataset(X, ds.y, ds.relevant, None, "bad", ds.params, seed)
            return ds

        return datasets.GeneratorSpec("bad", gen, "test", "test")

    for broken, message in [
        ("seed", "another seed, other data"),
        ("decoys", "decoys appended without moving"),
        ("nondeterministic", "same seed, same data"),
    ]:
        with (
            datasets.DATASETS.temporarily("bad", make_bad(broken)),
            pytest.raises(CheckFailed, match=f"dataset 'bad': {message}"),
        ):
            check_dataset("bad")


#: The verdicts that record their values per example, and a metric each records so.
PER_EXAMPLE = {
    "road": "road_gap",
    "roar": "roar_accuracy",
    "kar": "kar_accuracy",
    "randomisation": "randomisation_spearman_abs",
    "smprt": "smprt_spearman_abs",
    "emprt": "emprt_rise",
    "random_logit": "random_logit_spearman_abs",
    "data_randomisation": "data_randomisation_spearman_abs",
    "fragility": "fragility_random_intersection",
    "meta_consistency": "meta_minor_0",
}


@pytest.mark.parametrize("name", sorted(PER_EXAMPLE))
def test_every_verdict_records_its_values_per_example_and_they_average_to_the_metric(name):
    """What reliability across examples (Krippendorff's alpha) is computed from: checked by the battery on the random
    control's map, for the metric each verdict is judged by."""
    passed = check_scorer(name, data=CheckData().fold("tabular"), options=QUICK.get(name))
    assert f"tabular: {PER_EXAMPLE[name]} of the random map is the mean of its per-example values" in passed
