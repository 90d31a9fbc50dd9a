"""``python -m synthbench.report --store PATH --out DIR``: the report of a results database."""

import sys

from synthbench.report.cli import main

sys.exit(main())
