"""The defaults the library and both command lines share, in a module that imports nothing.

The command lines check their numbers against these before anything heavy (torch, the
registries) is imported, so bad input is answered at once; each value is documented where it
acts (:mod:`synthbench.models.competence`, :mod:`synthbench.models.presets`,
:mod:`synthbench.datasets.files`, :mod:`synthbench.runner.executors`), which re-exports it.
"""

from __future__ import annotations

__all__ = [
    "BATCH_MEMORY_MIB",
    "COMPETENCE_THRESHOLD",
    "check_threshold",
    "RUN_PRESETS",
    "DATA_DIR_ENV",
    "DEFAULT_GPUS_PER_CELL",
]

#: A model whose competence is below this did not learn enough for an explanation of it to say
#: anything about the method (stated with every report that uses it).
COMPETENCE_THRESHOLD = 0.5

#: The presets ``python -m synthbench.run`` explains without ``--model``: the one that learns what the booster
#: learns. The paper's ``passemiers2023`` learns on almost no default setting (competence below 0.5 on 40 of 48
#: fits); it runs in the 2023 suites, and wherever ``--model`` names it.
RUN_PRESETS = ("screened_mlp",)

#: The environment variable naming the folder of image files read from disk (MNIST, Fashion-MNIST, CIFAR-10).
DATA_DIR_ENV = "SYNTHBENCH_DATA_DIR"

#: MiB of input data the networks trained as one batch may hold before the batch is split
#: (:data:`synthbench.models.loop.BATCH_MEMORY`).
BATCH_MEMORY_MIB = 1024

#: The share of a GPU each neural task asks Ray for where the cluster has GPUs.
DEFAULT_GPUS_PER_CELL = 0.25


def check_threshold(threshold: float) -> float:
    """``threshold`` as a float; ValueError unless it lies strictly between 0 and 1."""
    value = float(threshold)
    if not 0.0 < value < 1.0:
        raise ValueError(f"the competence threshold must lie strictly between 0 and 1, got {threshold!r}")
    return value
