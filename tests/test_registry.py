"""The one registry: order kept, unknown names listed, duplicates refused, and every named part uses it."""

from __future__ import annotations

import dataclasses

import pytest

from synthbench import attribution, datasets, methods, models, scoring
from synthbench.models import presets
from synthbench.registry import Registry, UnknownName


def test_a_registry_keeps_order_lists_valid_names_and_refuses_duplicates():
    reg: Registry[int] = Registry("widget")
    for name, value in (("b", 2), ("a", 1), ("c", 3)):
        assert reg.add(name, value) == value
    assert reg.names() == ["b", "a", "c"] == list(reg)
    assert reg.items() == [("b", 2), ("a", 1), ("c", 3)] and reg.values() == [2, 1, 3]
    assert "a" in reg and "z" not in reg and len(reg) == 3
    with pytest.raises(ValueError, match="widget 'a' is already registered"):
        reg.add("a", 9)
    assert reg["a"] == 1
    with pytest.raises(KeyError) as info:
        reg["z"]
    assert str(info.value) == "unknown widget 'z'; valid names: b, a, c"
    assert isinstance(info.value, ValueError) and isinstance(info.value, UnknownName)
    assert reg.remove("a") == 1 and reg.names() == ["b", "c"]
    with pytest.raises(ValueError, match="non-empty string"):
        reg.add("", 0)


@pytest.mark.parametrize(
    "registry, lookup, what",
    [
        (datasets.DATASETS, datasets.spec, "dataset"),
        (methods.METHODS, methods.get_method, "method"),
        (models.MODEL_KINDS, models.model_kind, "model kind"),
        (presets.PRESETS, presets.get_preset, "model preset"),
        (attribution.ATTRIBUTION_METHODS, lambda n: attribution.attribute(n, None, None), "attribution method"),
        (scoring.SCORERS, scoring.get_scorer, "scorer"),
    ],
)
def test_every_named_part_is_one_registry_with_its_public_lookup(registry, lookup, what):
    assert isinstance(registry, Registry) and registry.what == what and len(registry) > 0
    first = registry.names()[0]
    with pytest.raises(KeyError, match=f"unknown {what} 'no_such_thing'; valid names: {first}, "):
        lookup("no_such_thing")


def test_the_public_verbs_register_into_the_registries_and_refuse_taken_names():
    with pytest.raises(ValueError, match="dataset 'xor' is already registered"):
        datasets.register("xor", description="d", family="f")(lambda **kw: None)
    with pytest.raises(ValueError, match="model kind 'mlp' is already registered"):
        models.register_model(models.ModelKind("mlp", lambda *a, **k: None, "d"))
    with pytest.raises(ValueError, match="model preset 'cnn' is already registered"):
        presets.register_preset(presets.get_preset("cnn"))
    with pytest.raises(ValueError, match="attribution method 'gradient' is already registered"):
        attribution.register_attribution("gradient", lambda *a, **k: None)
    with pytest.raises(ValueError, match="scorer 'roar' is already registered"):
        scoring.register_scorer(scoring.ROAR)
    with pytest.raises(ValueError, match="method 'rf' is already registered"):
        methods.register_method("rf", description="d")(lambda *a, **k: None)
    assert datasets.names() == datasets.DATASETS.names()
    assert methods.method_names() == methods.METHODS.names()
    assert models.kinds() == models.MODEL_KINDS.names()
    assert presets.preset_names() == presets.PRESETS.names()
    assert attribution.names() == attribution.ATTRIBUTION_METHODS.names()
    assert scoring.scorer_names() == scoring.SCORERS.names()


def test_temporarily_and_restoring_undo_registrations():
    reg: Registry[int] = Registry("widget")
    reg.add("a", 1)
    with reg.temporarily("b", 2):
        assert reg.names() == ["a", "b"]
    assert reg.names() == ["a"]
    with reg.restoring():
        reg.add("c", 3)
        reg.remove("a")
    assert reg.items() == [("a", 1)]


def test_every_synthbench_method_cites_the_publication_or_software_it_follows():
    from synthbench.methods.neural import VARIANTS
    from synthbench.methods.registry import AS_RUN_2023

    own = {name: spec for name, spec in methods.METHODS.items() if spec.fn.__module__.startswith("synthbench.")}
    assert len(own) >= 50
    uncited = [name for name, spec in own.items() if not spec.reference.strip()]
    assert not uncited, f"methods without a reference: {uncited}"
    assert all(spec.reference.startswith("control") for spec in own.values() if spec.control)
    replays = {name for name in own if name.endswith("_2023")} | set(VARIANTS) | {"treeshap_all_rows", "relief_1nn"}
    assert [name for name in own if (AS_RUN_2023 in own[name].reference) != (name in replays)] == []
    assert all("http" not in spec.reference for spec in own.values())
    assert own["integrated_gradients"].reference == "Sundararajan, Taly & Yan 2017 (ICML)"


def test_register_method_stores_the_reference_on_the_spec_and_it_never_enters_a_cell_id():
    from synthbench.runner.grid import Cell

    def fn(data, models, rng):
        return rng.random(data.n_features)

    with methods.METHODS.restoring():
        methods.register_method("cited", description="d", reference="Doe & Roe 2024 (Venue)")(fn)
        methods.register_method("bare", description="d")(fn)
        with pytest.raises(TypeError, match="method 'none': reference must be a string"):
            methods.register_method("none", description="d", reference=None)(fn)
        assert methods.get_method("cited").reference == "Doe & Roe 2024 (Venue)"
        assert methods.get_method("bare").reference == "" and "none" not in methods.METHODS
        before = Cell("xor", 100, 3, 0, 2, 0, "cited").cell_id
        spec = methods.METHODS.remove("cited")
        methods.METHODS.add("cited", dataclasses.replace(spec, reference="another reference"))
        assert Cell("xor", 100, 3, 0, 2, 0, "cited").cell_id == before
