"""Verdicts by removing what a map ranks first: remove and retrain, keep and retrain (:mod:`.retrain`:
ROAR, KAR), remove and debias (:mod:`.road`: ROAD, with the imputation of :mod:`.imputation`), and what
they share (:mod:`.base`: fractions, ranking keys, masks)."""
