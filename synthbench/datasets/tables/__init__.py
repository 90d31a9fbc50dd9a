"""Tabular generators: nonlinear classes of a few known columns among decoy columns.

* :mod:`~synthbench.datasets.tables.nonlinear` -- ``ring``, ``xor``, ``ring_xor``, ``ring_xor_sum``;
* :mod:`~synthbench.datasets.tables.dag` -- ``dag``, ``dag_confounders``;
* :mod:`~synthbench.datasets.tables.l2x` -- ``l2x_xor``, ``orange_skin``, ``nonlinear_additive``, ``switch``;
* :mod:`~synthbench.datasets.tables.hypercube` -- ``hypercube``;
* :mod:`~synthbench.datasets.tables.decoys` -- the decoy columns every generator appends.
"""

from synthbench.datasets.tables import dag, hypercube, l2x, nonlinear  # noqa: F401  (imported to register the generators)
