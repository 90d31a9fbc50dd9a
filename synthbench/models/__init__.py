"""Models shared by the methods of one fold, trained once and reused.

A model kind is registered with a trainer ``fn(data: FoldData, settings: TrainSettings) -> model``. The
:class:`SharedModels` of a fold trains each kind at most once, on first request, and records
its held-out accuracy and AUROC, the fold's learnability ceiling and the model's competence
(:mod:`synthbench.models.competence`), so a result can be judged against what the model learned.
"""

# Register the built-in kinds.
from synthbench.models import booster as _booster  # noqa: F401,E402
from synthbench.models import forest as _forest  # noqa: F401,E402
from synthbench.models import neural as _neural  # noqa: F401,E402
from synthbench.models.shared import (
    MODEL_KINDS,
    ModelKind,
    SharedModels,
    Siblings,
    TrainRequest,
    TrainSettings,
    kinds,
    model_kind,
    register_model,
)

__all__ = [
    "MODEL_KINDS",
    "ModelKind",
    "SharedModels",
    "Siblings",
    "TrainRequest",
    "TrainSettings",
    "kinds",
    "model_kind",
    "register_model",
]
