"""Feature-selection algorithms with no registry: the vectorised mRMR, ReliefF, knockoffs.

Plain functions on arrays (numpy in, numpy out), used by the thin method adapters of
:mod:`synthbench.methods` and usable on their own:

* :mod:`~synthbench.selection.mrmr`: ``mrmr(X_discrete, y, k, *, scheme="MIQ")``, exactly pymrmr's
  selection, vectorised; ``discretise``, ``mrmr_scores``, ``pymrmr_select``;
* :mod:`~synthbench.selection.relief`: ``relieff`` (skrebate's ReliefF, blocked) and
  ``skrebate_relieff``; :mod:`~synthbench.selection.relief_basic`: ``relief_1nn``;
* :mod:`~synthbench.selection.knockoffs`: uniform and Gaussian model-X knockoffs, ``make_knockoffs``.
"""
