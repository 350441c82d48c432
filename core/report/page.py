"""The report's HTML page around its sections: styles, the sorting script and a Content-Security-Policy that lets
the page load nothing at all — no network, no file — except its own inline pictures (``data:``), its one style
block and its one script (both allowed by their SHA-256, so no other script could run even if some outside text
escaped its escaping)."""

from __future__ import annotations

import base64
import hashlib

from svgagent.core.report.svg_charts import text

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { margin-bottom: 0.3em; }
.meta { color: #666; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.1em 1em; margin: 0.5em 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.headline { font-size: 1.15em; } .headline b { font-size: 1.2em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ddd; padding: 3px 6px; vertical-align: top; text-align: left; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; background: #f3f3f3; user-select: none; }
table.sortable th[aria-sort=ascending]::after { content: " ▲"; }
table.sortable th[aria-sort=descending]::after { content: " ▼"; }
td.prompt { max-width: 22em; } td.text { max-width: 28em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24em; overflow: auto; margin: 0.3em 0;
      background: #f7f7f7; padding: 4px; font-size: 12px; }
img.thumb { width: 96px; height: auto; border: 1px solid #ccc; background: #fff; display: block; }
tr.failed td { background: #fff4f4; }
.note { color: #666; font-size: 0.92em; }
figure { margin: 0.5em 0; } figcaption { color: #666; font-size: 0.92em; }
"""

SCRIPT = """(function () {
  function key(cell, type) {
    var v = cell.getAttribute('data-v');
    if (v === null) { v = cell.textContent; }
    if (type === 'num') { var n = parseFloat(v); return isNaN(n) ? -Infinity : n; }
    return v.toLowerCase();
  }
  var tables = document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables, function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.tabIndex = 0;
      function sort() {
        var ascending = th.getAttribute('aria-sort') !== 'ascending';
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
        var type = th.getAttribute('data-type') || 'text';
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[col], type), y = key(b.cells[col], type);
          return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      }
      th.addEventListener('click', sort);
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(); }
      });
    });
  });
  document.documentElement.setAttribute('data-sortable', String(tables.length));
})();"""


def _sha256(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(style: str, script: str) -> str:
    """Nothing loads but ``data:`` pictures, and nothing runs or styles but this ``style`` and this ``script``."""
    return (
        f"default-src 'none'; img-src data:; style-src {_sha256(style)}; script-src {_sha256(script)}; "
        "base-uri 'none'; form-action 'none'"
    )


def page(title: str, body: str) -> str:
    """The whole document: ``body`` is markup already escaped by its makers; ``title`` is outside text."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy(STYLE, SCRIPT)}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{text(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n"
        f"<script>{SCRIPT}</script>\n</body></html>\n"
    )
