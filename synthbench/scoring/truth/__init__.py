"""Verdicts against the truth: the ground-truth scorer (:mod:`.ground_truth`), its ranking metrics
(:mod:`.metrics`) and the localisation metrics of image masks (:mod:`.localisation`)."""
