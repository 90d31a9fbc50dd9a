"""The report opened in a real browser (the system's headless Chromium, driven by Playwright): no script error, no
request leaving the page, every figure displayed, tables that sort and filter, links that open the collapsed section
they point into."""

import re

import pytest
from chromium_fixture import chromium  # noqa: F401  (the fixture)

from synthbench.report import build_report, load_results, write_report
from synthbench.runner import GridSpec, ResultStore
from synthbench.runner.execute import execute

HEAD = "Array.from(document.querySelector('#leaderboard + table').tHead.rows[0].cells)"
ROWS = (
    "Array.from(document.querySelector('#leaderboard + table').tBodies[0].rows)"
    ".filter(r => getComputedStyle(r).display !== 'none')"
)


class Opened:
    """A report open in Chromium, with what it did: ``errors`` (uncaught exceptions and console errors) and
    ``requests`` (URLs it asked for beyond its own file and ``data:`` URIs)."""

    def __init__(self, page) -> None:
        self.page, self.errors, self.requests = page, [], []
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else self.requests.append(r.url))

    def evaluate(self, expression: str):
        return self.page.evaluate(expression)


@pytest.fixture(scope="module")
def page(tmp_path_factory, chromium):  # noqa: F811
    """The report of a small grid (two datasets, two decoy counts, three folds; a control, a filter and saliency on
    the shared MLP), open in Chromium."""
    folder = tmp_path_factory.mktemp("browser")
    cells = GridSpec(
        ("xor", "ring"), ("random", "anova", "saliency"), (0, 8), n_samples=150, n_folds=3, models=("sparse_mlp",)
    ).cells()
    with ResultStore(folder / "s.sqlite") as db:
        execute(cells, db, command="browser test grid")
    written = write_report(build_report(load_results(folder / "s.sqlite")), folder / "report")
    figures = sorted(p.name for p in written if p.suffix == ".png")
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    opened = Opened(context.new_page())
    opened.page.goto((folder / "report" / "report.html").as_uri(), wait_until="load")
    yield opened, figures, folder
    context.close()


def rows(page):
    return page.evaluate(f"{ROWS}.map(r => Array.from(r.cells).map(c => c.textContent.trim()))")


def click_header(page, name):
    page.evaluate(f"{HEAD}.find(c => c.textContent.trim().startsWith({name!r})).click()")


def number(text):
    """The leading number of a cell's text, exponent included ("6.66e-05 †" is 6.66e-05); None for a missing value."""
    return None if text in ("–", "") else float(re.match(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?", text, re.I).group(0))


def test_the_page_renders_without_script_error_and_asks_for_nothing(page):
    opened, _, _ = page
    assert opened.evaluate("document.readyState") == "complete"
    assert opened.evaluate("!!document.getElementById('sb-filters')")  # the script ran to its end
    assert opened.errors == [] and opened.requests == []


def test_every_figure_is_displayed(page):
    opened, figures, _ = page
    shown = opened.evaluate(
        "Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.getBoundingClientRect().width, i.alt])"
    )
    assert len(shown) == len(figures) >= 5  # overview, curves, breakpoints, cost, critical-difference diagram
    assert all(done and natural > 100 and width > 100 for done, natural, width, _ in shown), shown


def test_clicking_a_header_sorts_the_rows_and_clicking_again_reverses_them(page):
    opened, _, _ = page
    before = rows(opened)
    assert [number(r[1]) for r in before] == sorted((number(r[1]) for r in before), reverse=True)  # best_k first
    click_header(opened, "method")  # text: alphabetical
    names = [r[0] for r in rows(opened)]
    assert names == sorted(names) != [r[0] for r in before]
    assert sorted(map(tuple, rows(opened))) == sorted(map(tuple, before))  # the same rows, reordered
    header = opened.evaluate(f"{HEAD}.map(c => c.textContent.trim())")
    col = header.index("method s / cell")
    click_header(opened, "method s / cell")  # numbers: largest first, by value (not as text)
    seconds = [number(r[col]) for r in rows(opened)]
    assert seconds == sorted(seconds, reverse=True)  # measured times may tie; the values below cannot
    click_header(opened, "method s / cell")
    assert [number(r[col]) for r in rows(opened)] == sorted(seconds)
    assert opened.evaluate(f"{HEAD}[{col}].getAttribute('aria-sort')") == "ascending"
    # By value, not as text ("10" above "9.5"), and a missing value last whichever the direction.
    opened.evaluate(f"{ROWS}.forEach((r, i) => {{ r.cells[{col}].textContent = ['9.5', '–', '10'][i]; }})")
    click_header(opened, "method s / cell")
    assert [r[col] for r in rows(opened)] == ["10", "9.5", "–"]
    click_header(opened, "method s / cell")
    assert [r[col] for r in rows(opened)] == ["9.5", "10", "–"]
    # A small value is written with an exponent, and still sorts by value ("6.66e-05" below "0.000654").
    opened.evaluate(f"{ROWS}.forEach((r, i) => {{ r.cells[{col}].textContent = ['6.66e-05', '0.000654', '–'][i]; }})")
    click_header(opened, "method s / cell")
    assert [r[col] for r in rows(opened)] == ["0.000654", "6.66e-05", "–"]


def test_the_filters_keep_the_rows_of_a_family_a_preset_and_a_dataset(page):
    opened, _, _ = page
    every = {r[0].split(" ")[0] for r in rows(opened)}
    assert every == {"saliency@sparse_mlp", "anova", "random"}

    def choose(which, value):
        opened.evaluate(
            f"(() => {{ const s = document.getElementById('sb-{which}'); s.value = {value!r}; "
            "s.dispatchEvent(new Event('change')); })()"
        )

    choose("family", "attribution")
    assert {r[0].split(" ")[0] for r in rows(opened)} == {"saliency@sparse_mlp"}
    choose("family", "")
    choose("preset", "sparse_mlp")
    assert {r[0].split(" ")[0] for r in rows(opened)} == {e for e in every if e.endswith("@sparse_mlp")}
    choose("preset", "")
    assert {r[0].split(" ")[0] for r in rows(opened)} == every
    choose("dataset", "ring")
    hidden = opened.evaluate(
        "Array.from(document.querySelectorAll('details[data-setting]'))"
        ".map(d => [d.dataset.setting, getComputedStyle(d).display === 'none', d.open])"
    )
    assert sorted(hidden) == [["ring", False, True], ["xor", True, False]]
    choose("dataset", "")


def test_a_link_into_a_collapsed_section_opens_it(page):
    opened, _, _ = page
    assert opened.evaluate("document.getElementById('setting-xor').open") is False
    opened.evaluate("document.querySelector('a[href=\"#setting-xor\"]').click()")
    assert opened.evaluate("document.getElementById('setting-xor').open") is True
    opened.evaluate("document.querySelector('a[href^=\"#method-\"]').click()")
    assert opened.evaluate("location.hash").startswith("#method-")
    assert opened.errors == [] and opened.requests == []


def test_a_screenshot_of_the_top_of_the_page(page):
    opened, _, folder = page
    shot = folder / "top.png"
    opened.page.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
