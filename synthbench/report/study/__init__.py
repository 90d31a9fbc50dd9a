"""Which verdict to trust: the study, apart from the page machinery of :mod:`synthbench.report`.

Where a number on the study page (or in the report's "Which verdict to trust") comes from:

- ``validity.py``: a verdict's rank agreement with the truth per setting, the split-half reliability of both
  orderings and the agreement corrected for attenuation, the mean across settings with its hierarchical interval,
  and the paired tests between verdicts;
- ``reliability.py``: a verdict's reliability without the truth (Krippendorff's alpha across examples, internal
  consistency, MetaQuantus' meta-consistency) and whether it predicts validity;
- ``verdicts.py``: every verdict of a store paired with the truth and summarised (:class:`VerdictValidity`), the ladder
  of known order included;
- ``section.py``: all of it written out as Markdown, for the study page and the report's section;
- ``page.py``: the study page, ``python -m synthbench.report.study``.
"""
