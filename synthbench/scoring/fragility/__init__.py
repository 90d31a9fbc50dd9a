"""Fragility under label-preserving perturbations: the scorer (:mod:`.scorer`), the attacks (:mod:`.attacks`),
the budget they search (:mod:`.budget`) and the sensitivity of maps to random perturbations
(:mod:`.sensitivity`)."""
