"""The documentation's examples of your own components run as written and pass their checks, so the pages cannot rot.

Each ```python block of ``docs/write-your-own.md`` and ``docs/getting-started.md`` is run on its own (a
fresh namespace, as a user pasting it would), inside blocks that undo every registration it makes, so
nothing leaks into other tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import registrations_undone, registries

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ("write-your-own.md", "getting-started.md")


def examples(text: str, page: str) -> list[tuple[str, str]]:
    """``(page: subsection title, code)`` of every python block of a documentation page."""
    out = []
    for part in text.split("\n## ")[1:]:
        title = part.splitlines()[0].strip()
        out += [(f"{page}: {title}", code) for code in re.findall(r"^```python\n(.*?)^```$", part, re.M | re.S)]
    return out


EXAMPLES = [e for page in PAGES for e in examples((DOCS / page).read_text(encoding="utf-8"), page)]


def test_the_pages_show_every_kind_of_component_each_ending_with_its_check():
    checks = [code.rstrip().splitlines()[-1] for _, code in EXAMPLES]
    assert all(re.fullmatch(r"check_(dataset|method|scorer|model_kind)\(\"\w+\"\)", line) for line in checks), checks
    called = {re.match(r"(check_\w+)\(", line).group(1) for line in checks}
    assert called == {"check_dataset", "check_method", "check_scorer", "check_model_kind"}
    datasets = " ".join(code for _, code in EXAMPLES if "check_dataset(" in code)
    assert 'kind="tabular"' in datasets and 'kind="image"' in datasets  # tables and images, with a mask


@pytest.mark.parametrize("title, code", EXAMPLES, ids=[f"{i}-{t}" for i, (t, _) in enumerate(EXAMPLES)])
def test_each_example_runs_as_written_and_passes_its_check(title, code):
    before = {r.what: r.names() for r in registries()}
    with registrations_undone():
        exec(compile(code, title, "exec"), {"__name__": "readme_example"})  # a check raises CheckFailed
        added = {r.what: set(r.names()) - set(before[r.what]) for r in registries()}
        assert any(added.values()), "the example registers nothing"
    assert {r.what: r.names() for r in registries()} == before  # nothing leaks into other tests
