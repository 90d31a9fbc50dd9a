"""``python -m synthbench.report.study``: the verdicts study page (:mod:`synthbench.report.study.page`)."""

from synthbench.report.study.page import main

raise SystemExit(main())
