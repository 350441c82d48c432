"""`svgagent report`: one self-contained HTML file. Hostile model output is escaped; headless Chromium (launched
with the flags core/scoring/chromium_page gives the renderer's browsers) shows the pictures, tables and charts and
makes no network request; demo runs and imported Eval Protocol JSONL both report."""

from __future__ import annotations

import asyncio
import base64
import html.parser
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_process import svgagent_argv
from factories import FLAG_SVG, Spec, build_run, standard_specs
from PIL import Image

from svgagent.core.exchange.ep_status import StatusCode
from svgagent.core.report import page as report_page
from svgagent.core.report.html_report import build_report
from svgagent.core.scoring.chromium_browser import Browser
from svgagent.core.scoring.chromium_page import PageGeometry, browser_flags
from svgagent.core.scoring.models import RolloutStatus
from svgagent.core.serve.training_runs import StepHint, TrainingStore
from svgagent.core.store.run_store import Store
from svgagent.tui.cli.main import main

ATTACK = '<script>document.title="pwned"</script><img src="http://evil.test/x.png" onerror="alert(1)">'


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "runs.db") as s:
        yield s


class Page(html.parser.HTMLParser):
    """What a browser would build from the markup: elements by tag, with their attributes."""

    def __init__(self, markup: str) -> None:
        super().__init__()
        self.tags: dict[str, list[dict[str, str | None]]] = {}
        self.feed(markup)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.setdefault(tag, []).append(dict(attrs))


def hostile_run(store: Store, run_id: str = "20260101-120000-test") -> str:
    specs = standard_specs()
    specs[0] = Spec(
        0,
        fulfilled=3,
        rationale=f"Looks fine {ATTACK}\nsecond line",
        extra={"raw_answer": f"Here: {ATTACK}\n```svg\n{FLAG_SVG}\n```"},
        prompt=f"Draw {ATTACK}",
    )
    return build_run(store, specs, run_id=run_id, name=f"run {ATTACK}")


def test_hostile_text_is_escaped_everywhere(store: Store, tmp_path: Path) -> None:
    run = hostile_run(store)
    assert main(["report", run, "-o", str(tmp_path / "r.html"), "--store", str(store.path)]) == 0
    document = (tmp_path / "r.html").read_text(encoding="utf-8")
    page = Page(document)
    assert len(page.tags["script"]) == 1  # the report's own sorting script, nothing from the answer or rationale
    assert not any("evil.test" in (img.get("src") or "") for img in page.tags["img"])
    assert all((img.get("src") or "").startswith("data:image/png;base64,") for img in page.tags["img"])
    escaped = "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;"
    assert document.count(escaped) >= 4  # the answer, the rationale, the prompt and the run's name
    assert "<script>document.title" not in document
    csp = next(m["content"] for m in page.tags["meta"] if m.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "img-src data:" in csp and "unsafe-inline" not in csp


def test_the_report_holds_pictures_tables_and_charts(store: Store) -> None:
    run = build_run(store)
    store.set_override(f"{run}.0.0", fulfilled=1)  # a label: the agreement section has something to show
    document = build_report(store, [run])
    page = Page(document)
    pictures = [img["src"] for img in page.tags["img"]]
    # the four finished rollouts with an SVG (a scene, a flag) have pictures; the two disagreements repeat theirs
    assert len(set(pictures)) == 2 and len(pictures) == 6
    png = base64.b64decode(pictures[0].split(",", 1)[1])
    with Image.open(__import__("io").BytesIO(png)) as image:
        assert image.format == "PNG" and max(image.size) <= 192
    assert {t.get("class") for t in page.tags["table"]} >= {"sortable rollouts", "sortable disagreements"}
    assert any("histogram" in (s.get("class") or "") for s in page.tags["svg"])
    assert "Judge–human agreement" in document and "Cohen" in document


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("needs Debian's chromium (installed by CI)")
    return found


def dump_dom(chromium: str, page: Path) -> str:
    """The DOM headless Chromium builds from ``page`` with the renderer's flags but scripts on (as in a person's
    browser) and no DevTools pipe: the sorting script has run."""
    profile = tempfile.mkdtemp(prefix="svgagent-report-test-")
    try:
        flags = [
            f
            for f in browser_flags(profile)
            if f not in ("--remote-debugging-pipe", "--blink-settings=scriptEnabled=false")
        ]
        argv = [chromium, *flags, "--virtual-time-budget=3000", "--dump-dom", page.as_uri()]
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR") or k.startswith("XDG_")}
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env).stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def shoot(chromium: str, document: str) -> tuple[bytes, list[str]]:
    """A 1280×2000 screenshot of ``document`` taken by the renderer's own browser (core/scoring/chromium_browser),
    and every URL the page tried to fetch: its DevTools session pauses each request and fails all but data: URLs."""

    async def go() -> tuple[bytes, list[str]]:
        browser = Browser(chromium)
        await browser.start()
        try:
            png = await browser.render(document, PageGeometry(1280, 2000, 1))
            return png, list(browser.refused)
        finally:
            browser.kill()

    return asyncio.run(go())


def test_chromium_shows_it_and_fetches_nothing(store: Store, tmp_path: Path) -> None:
    chromium = _chromium()
    _, tried = shoot(chromium, '<!DOCTYPE html><img src="http://evil.test/control.png">')
    assert tried == ["http://evil.test/control.png"]  # the control: a fetch of the page is seen

    run = hostile_run(store)
    store.set_override(f"{run}.0.0", fulfilled=1)
    other = build_run(store, run_id="20260101-130000-test", name="second run")
    report = tmp_path / "report.html"
    assert main(["report", run, other, "-o", str(report), "--store", str(store.path)]) == 0
    png, tried = shoot(chromium, report.read_text(encoding="utf-8"))
    assert tried == []  # no request left the page: no picture, font, script or prefetch
    shot = tmp_path / "report.png"
    shot.write_bytes(png)
    with Image.open(shot) as image:
        assert image.size == (1280, 2000)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is not None and len(colours) > 200  # pictures and charts, not a blank page
    keep = os.environ.get("REPORT_SCREENSHOT")  # where a person looking at it wants the screenshot
    if keep:
        shutil.copy(shot, keep)

    dom = dump_dom(chromium, report)
    page = Page(dom)
    assert page.tags["html"][0].get("data-sortable") == "5"  # the script ran (its CSP hash) and found each table
    assert len(page.tags["img"]) >= 10 and all(i["src"].startswith("data:image/png") for i in page.tags["img"])
    assert len(page.tags["svg"]) >= 3  # two histograms and the chart of the runs' means
    title = dom.split("<title>", 1)[1].split("</title>", 1)[0]
    assert title.startswith("svgagent report: run &lt;script&gt;document.title=")  # no script of the answer ran


def test_demo_run_and_imported_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "svghome"
    monkeypatch.setenv("SVGAGENT_HOME", str(home))
    env = {**os.environ, "SVGAGENT_HOME": str(home)}
    made = subprocess.run(
        svgagent_argv("eval", "--demo", "--rows", "4", "--judge-mode", "per-requirement", "--json"),
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    demo = json.loads(made.stdout)["run_id"]
    with Store(home / "runs.db") as store:
        scored = [r for r in store.list_rollouts(demo) if r.is_score_valid and r.fulfilled is not None]
        first = scored[0]
        store.set_override(first.rollout_id, fulfilled=first.total - first.fulfilled if first.fulfilled else 1)
    assert main(["export", demo, "-o", str(tmp_path / "demo.jsonl")]) == 0
    assert main(["import", str(tmp_path / "demo.jsonl"), "--name", "imported <b>"]) == 0
    with Store(home / "runs.db") as store:
        imported = next(r.run_id for r in store.list_runs() if r.name == "imported <b>")
    capsys.readouterr()
    assert main(["runs", "agreement", imported, "--json"]) == 0
    labels = json.loads(capsys.readouterr().out)  # the override came through the export and the import
    assert (labels["overridden"], labels["labelled"], labels["disagreements"]) == (1, 1, 1)
    assert main(["report", demo, imported, "-o", str(tmp_path / "both.html")]) == 0
    document = (tmp_path / "both.html").read_text(encoding="utf-8")
    page = Page(document)
    assert "imported &lt;b&gt;" in document and "imported <b>" not in document
    assert {t.get("class") for t in page.tags["table"]} >= {"sortable leaderboard", "sortable rollouts"}
    # both runs' pictures: the demo's stored ones, the imported rows' SVGs drawn in the sandbox (EP rows carry none)
    assert len(page.tags["img"]) >= 2 * len(scored)
    assert document.count("Worst disagreements (1 of 1)") == 2


def test_a_training_step_gets_its_training_runs_score_per_step(store: Store) -> None:
    """Rollouts served to a trainer (`svgagent serve --judge`): three steps judged locally, means 0, 0.5, 1."""
    training = TrainingStore(store, job_name="accounts/a/reinforcementFineTuningJobs/j1")
    for step, score in ((1, 0.0), (2, 0.5), (3, 1.0)):
        for row in ("row_a", "row_b"):
            ident = SimpleNamespace(
                invocation_id="inv", experiment_id="exp", rollout_id=f"s{step}-{row}", run_id=f"ep-{step}", row_id=row
            )
            place = training.place(ids=ident, model="m", hint=StepHint(step, None, "metadata"), judged=True)
            columns = {
                "status": RolloutStatus.SCORED,
                "raw_answer": "answer",
                "score": score,
                "fulfilled": int(score * 2),
                "is_score_valid": True,
            }
            training.record(
                place,
                ids=ident,
                model="m",
                prompt="Draw <b>",
                requirements=("a", "b"),
                judged=True,
                columns=columns,
                code=StatusCode.FINISHED,
                message="ok",
            )
    steps = training.steps("exp")
    assert [s.mean_local for s in steps] == [0.0, 0.5, 1.0]
    document = build_report(store, [steps[1].run_id])
    chart = document.split('<section id="steps">', 1)[1].split("</section>", 1)[0]
    assert "<h2>Score per step</h2>" in chart and "mean local score per step" in chart
    points = Page(chart).tags["circle"]
    assert len(points) == 3
    heights = [float(p["cy"]) for p in points]
    assert heights[0] > heights[1] > heights[2]  # rising scores: higher on the page
    assert "Draw &lt;b&gt;" in document


def test_a_click_on_a_header_sorts_the_rows(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sorting script in Chromium: the page's own script, followed (for this test only, allowed by its hash like
    the script itself) by two clicks on the score header and a note of the order the rows are in then."""
    chromium = _chromium()
    clicks = """
(function () { var t = document.querySelector('table.rollouts'), th = t.tHead.rows[0].cells[4], v = [];
  th.click(); th.click();
  Array.prototype.forEach.call(t.tBodies[0].rows, function (r) { v.push(r.cells[4].textContent); });
  document.documentElement.setAttribute('data-order', v.join(',')); })();"""
    monkeypatch.setattr(report_page, "SCRIPT", report_page.SCRIPT + clicks)
    run = build_run(store)
    (tmp_path / "sorted.html").write_text(build_report(store, [run]), encoding="utf-8")
    page = Page(dump_dom(chromium, tmp_path / "sorted.html"))
    order = page.tags["html"][0]["data-order"]
    assert order == "1.000,0.750,0.750,0.000,–,–"  # descending on the second click; rollouts without a score last
