"""The report's HTML page: one self-contained file, readable without its script, explorable with it.

:func:`html_page` renders the report's Markdown (python-markdown: tables, ids, Markdown inside the
``<details>`` blocks of the per-dataset sections) and embeds every figure as a ``data:`` URI. A
small inline script (no library, no request) then makes every table sortable (click a column
header: numbers by value, text alphabetically, missing values last; click again to reverse) and
adds a filter bar: method family (read from the method descriptions' ``data-family``), model
preset (the ``@preset`` of a row's method), dataset (the per-dataset sections and the ``setting``
columns) and free text; a link to a table inside a collapsed section opens it. Without the script the
page shows everything, unsorted and unfiltered.
"""

from __future__ import annotations

import base64
import re

__all__ = ["html_page", "CSS", "SCRIPT"]

CSS = """body{font-family:system-ui,sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;color:#222;
line-height:1.45}
table{border-collapse:collapse;font-size:13px;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 7px}
th{background:#f3f3f3;cursor:pointer;user-select:none}th[aria-sort=ascending]::after{content:" \\25B2"}
th[aria-sort=descending]::after{content:" \\25BC"}td{text-align:right}td:first-child{text-align:left}
img{max-width:100%}code{background:#f3f3f3;padding:0 3px}a{color:#1a5fb4}
details{margin:.4em 0;border-left:3px solid #ddd;padding-left:.6em}summary{cursor:pointer;font-weight:600}
#sb-filters{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccc;padding:.4em 0;z-index:2;font-size:13px}
#sb-filters select,#sb-filters input,#sb-filters button{margin-right:.6em;font-size:13px}
dl.methods dt{font-weight:600;margin-top:.6em}dl.methods dd{margin-left:1.2em}
tr.sb-hidden,details.sb-hidden{display:none}[id]{scroll-margin-top:3.5em}"""

SCRIPT = r"""(function () {
"use strict";
const $$ = (s, r) => Array.from((r || document).querySelectorAll(s));
function num(t) {
  t = t.replace(/[\u2020\u2265\u2264<>]/g, "").trim();
  if (t === "" || t === "\u2013" || t === "-" || t === "missing") return null;
  const m = t.match(/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?/i);
  return m ? parseFloat(m[0]) : NaN;
}
function sortTable(table, col, th) {
  const body = table.tBodies[0];
  const rows = Array.from(body.rows).map((r, i) => {
    const t = r.cells[col] ? r.cells[col].textContent.trim() : "";
    return {r: r, i: i, t: t, n: num(t)};
  });
  const numeric = rows.some(k => k.n !== null) && rows.every(k => k.n === null || !isNaN(k.n));
  const was = th.getAttribute("aria-sort");
  const dir = was ? (was === "ascending" ? "descending" : "ascending") : (numeric ? "descending" : "ascending");
  const sign = dir === "ascending" ? 1 : -1;
  rows.sort((a, b) => {
    const ea = numeric ? a.n === null : a.t === "", eb = numeric ? b.n === null : b.t === "";
    if (ea !== eb) return ea ? 1 : -1;
    const c = ea ? 0 : numeric ? a.n - b.n : a.t.localeCompare(b.t);
    return c !== 0 ? sign * c : a.i - b.i;
  });
  rows.forEach(k => body.appendChild(k.r));
  $$("th", table).forEach(h => h.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", dir);
}
$$("table").forEach(table => {
  if (!table.tHead || !table.tBodies.length) return;
  Array.from(table.tHead.rows[0].cells).forEach((th, col) => {
    th.title = "sort by this column";
    th.addEventListener("click", () => sortTable(table, col, th));
  });
});
const family = {};
$$("dt[data-family]").forEach(d => { family[d.dataset.method] = d.dataset.family; });
const methodTables = $$("table").filter(t => t.tHead && /^method/.test(t.tHead.rows[0].cells[0].textContent.trim()));
const settingColumn = t => t.tHead ?
    Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent.trim() === "setting") : -1;
const settingTables = $$("table").filter(t => settingColumn(t) >= 0);
const entry = row => row.cells[0].textContent.trim().split(" ")[0];
const presets = new Set(), datasets = new Set();
methodTables.forEach(t => Array.from(t.tBodies[0].rows).forEach(r => {
  const p = entry(r).split("@")[1]; if (p) presets.add(p);
}));
$$("details[data-setting]").forEach(d => datasets.add(d.dataset.setting));
const bar = document.createElement("div");
bar.id = "sb-filters";
function select(name, values) {
  const s = document.createElement("select");
  s.id = "sb-" + name;
  s.add(new Option("every " + name, ""));
  Array.from(values).sort().forEach(v => s.add(new Option(v, v)));
  bar.appendChild(s);
  return s;
}
const famSel = select("family", new Set(Object.values(family)));
const preSel = select("preset", presets);
const dsSel = select("dataset", datasets);
const text = document.createElement("input");
text.id = "sb-text"; text.type = "search"; text.placeholder = "filter rows by text";
bar.appendChild(text);
const toggle = document.createElement("button");
toggle.id = "sb-expand"; toggle.type = "button"; toggle.textContent = "expand all sections";
bar.appendChild(toggle);
const count = document.createElement("span");
count.id = "sb-count";
bar.appendChild(count);
const title = document.querySelector("h1");
if (title) title.after(bar); else document.body.prepend(bar);
function sameSetting(value, ds) { return value === ds || value.startsWith(ds + "/"); }
function apply() {
  const f = famSel.value, p = preSel.value, ds = dsSel.value, q = text.value.trim().toLowerCase();
  let shown = 0, total = 0;
  methodTables.forEach(t => Array.from(t.tBodies[0].rows).forEach(r => {
    const name = entry(r), base = name.split("@")[0], preset = name.split("@")[1] || "";
    const keep = (!f || family[base] === f) && (!p || preset === p) && (!q || r.textContent.toLowerCase().includes(q));
    r.classList.toggle("sb-hidden", !keep);
    total += 1; shown += keep ? 1 : 0;
  }));
  settingTables.forEach(t => {
    const col = settingColumn(t);
    Array.from(t.tBodies[0].rows).forEach(r => {
      if (ds && !sameSetting(r.cells[col].textContent.trim(), ds)) r.classList.add("sb-hidden");
      else if (!methodTables.includes(t)) r.classList.remove("sb-hidden");
    });
  });
  $$("details[data-setting]").forEach(d => {
    d.classList.toggle("sb-hidden", !!ds && d.dataset.setting !== ds);
    if (ds && d.dataset.setting === ds) d.open = true;
  });
  count.textContent = (f || p || q) ? "showing " + shown + " of " + total + " method rows" : "";
}
[famSel, preSel, dsSel].forEach(s => s.addEventListener("change", apply));
text.addEventListener("input", apply);
toggle.addEventListener("click", () => {
  const open = toggle.textContent.startsWith("expand");
  $$("details").forEach(d => { d.open = open; });
  toggle.textContent = (open ? "collapse" : "expand") + " all sections";
});
function openTarget() {
  const id = decodeURIComponent(location.hash.slice(1));
  const el = id && document.getElementById(id);
  if (!el) return;
  for (let d = el; d; d = d.parentElement) if (d.tagName === "DETAILS") d.open = true;
  el.scrollIntoView();
}
window.addEventListener("hashchange", openTarget);
openTarget();
})();"""


def html_page(markdown_text: str, images: dict[str, bytes], *, title: str = "synthbench report") -> str:
    """The report as one HTML page: ``markdown_text`` rendered, each ``src="NAME.png"`` replaced by the PNG
    bytes of ``images[NAME.png]`` as a ``data:`` URI, the style and the script inlined."""
    import markdown

    body = markdown.markdown(markdown_text, extensions=["tables", "toc", "md_in_html"])

    def embed(match: re.Match) -> str:
        data = base64.b64encode(images[match.group(1)]).decode("ascii")
        return f'src="data:image/png;base64,{data}"'

    body = re.sub(r'src="([^"]+\.png)"', embed, body)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}</style></head><body>\n{body}\n<script>{SCRIPT}</script>\n</body></html>\n"
    )
