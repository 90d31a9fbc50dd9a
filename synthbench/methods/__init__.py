"""Feature-scoring methods and their registry.

``synthbench.methods.mrmr(X_discrete, y, k, *, scheme="MIQ")`` is the vectorised mRMR
selector; ``synthbench.methods.attribute(name, model, inputs, target=None, **params)`` explains
any torch model with one of the attribution methods (captum's verb); every benchmark method is listed by
:func:`method_names` and described by
:func:`get_method`.
"""

from synthbench.methods.recipe import AttributionRecipe
from synthbench.methods.registry import (
    METHODS,
    MethodSpec,
    default_methods,
    get_method,
    method_names,
    method_rng,
    register_method,
    run_method,
)

# Register the built-in methods (import order = listing order).
from synthbench.methods import controls as _controls  # noqa: E402,F401
from synthbench.methods import trees as _trees  # noqa: E402,F401
from synthbench.methods import boosted as _boosted  # noqa: E402,F401
from synthbench.methods import filters as _filters  # noqa: E402,F401
from synthbench.methods import neural as _neural  # noqa: E402,F401
from synthbench.methods import agnostic as _agnostic  # noqa: E402,F401
from synthbench.methods import ladder as _ladder  # noqa: E402,F401
from synthbench.methods import embedded as _embedded  # noqa: E402,F401
from synthbench.methods import selectors as _selectors  # noqa: E402,F401
from synthbench.methods import deeppink_2023 as _deeppink_2023  # noqa: E402,F401
from synthbench.methods import selectors_2023 as _selectors_2023  # noqa: E402,F401
from synthbench.attribution import attribute  # noqa: E402
from synthbench.selection.mrmr import mrmr  # noqa: E402

__all__ = [
    "MethodSpec",
    "METHODS",
    "AttributionRecipe",
    "register_method",
    "get_method",
    "method_names",
    "default_methods",
    "run_method",
    "method_rng",
    "mrmr",
    "attribute",
]
