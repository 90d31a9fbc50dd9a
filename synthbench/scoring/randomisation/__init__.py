"""Sanity checks by randomisation: of the model's parameters (:mod:`.model`: randomisation, sMPRT, eMPRT),
of the labels it learnt (:mod:`.data`), of the explained class (:mod:`.random_logit`), with the
similarity measures they compare maps by (:mod:`.similarity`) and the activation-scale curve
(:mod:`.activation_scale`)."""
