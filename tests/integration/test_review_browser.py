"""The human review loop end to end: sample a run, label it in headless Chromium, merge, judge the labelled data."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judgebias.review.__main__ import main as review
from tests.reliability.helpers import run_here

CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
N = 8


class Page:
    """The labelling page in one headless Chromium with a profile of its own (one annotator's browser)."""

    def __init__(self, profile: Path, downloads: Path) -> None:
        webdriver = pytest.importorskip("selenium.webdriver")
        if not Path(CHROMIUM).exists() or not Path(CHROMEDRIVER).exists():
            pytest.skip("chromium and chromium-driver are not installed")
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in (
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--window-size=1280,900",
        ):
            options.add_argument(flag)
        options.add_experimental_option("prefs", {"download.default_directory": str(downloads)})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.driver.execute_cdp_cmd(
            "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
        )
        self.downloads = downloads

    def text(self, element_id: str) -> str:
        """The text of an element of the page, exactly as the page set it."""
        return str(self.driver.execute_script(f"return document.getElementById('{element_id}').textContent"))

    def shows(self, element_id: str, expected: str) -> str:
        """The element's text once it reads `expected` (the page may still be loading), else what it reads."""
        for _ in range(50):
            if self.text(element_id) == expected:
                break
            time.sleep(0.1)
        return self.text(element_id)

    def press(self, key: str) -> None:
        """Type one key on the page, as a person would."""
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(self.driver).send_keys(key).perform()

    def label(self, items: dict[str, dict[str, Any]], wanted: str) -> str:
        """Give the pair on screen the item-frame label `wanted` (a, b, tie, skip) by its key; return its id."""
        first = self.text("first")
        shown_a_first = first == items_by_text(items, first)["a"]
        item = items_by_text(items, first)
        key = {"tie": "t", "skip": "s"}.get(wanted) or ("1" if (wanted == "a") == shown_a_first else "2")
        before = self.text("position") + self.text("progress")
        self.press(key)
        for _ in range(50):  # the page has taken the answer when the progress or the pair shown changes
            if self.text("position") + self.text("progress") != before:
                break
            time.sleep(0.05)
        return str(item["id"])

    def export(self) -> list[dict[str, Any]]:
        """Click "export labels" and read the file the browser saved."""
        self.driver.find_element("id", "export").click()
        for _ in range(100):  # saved when the file is there, whole (ends in a newline) and no part is in flight
            done = list(self.downloads.glob("*.jsonl"))
            if done and not list(self.downloads.glob("*.crdownload")):
                text = done[0].read_text(encoding="utf-8")
                if text.endswith("\n"):
                    return [json.loads(line) for line in text.splitlines()]
            time.sleep(0.1)
        raise AssertionError(f"no labels file was saved in {self.downloads}")

    def close(self) -> None:
        """Quit the browser."""
        self.driver.quit()


def items_by_text(items: dict[str, dict[str, Any]], answer: str) -> dict[str, Any]:
    """The sample item one of whose answers is `answer` (each answer of the sample is unique)."""
    (item,) = [i for i in items.values() if answer in (i["a"], i["b"])]
    return item


@pytest.fixture
def browsers(tmp_path: Path) -> Iterator[Any]:
    """Start annotators' browsers by name; every one is closed afterwards."""
    started: list[Page] = []

    def start(name: str) -> Page:
        page = Page(tmp_path / f"profile-{name}", tmp_path / f"downloads-{name}")
        started.append(page)
        return page

    yield start
    for page in started:
        page.close()


def label_all(page: Page, items: dict[str, dict[str, Any]], annotator: str, plan: list[str]) -> list[dict[str, Any]]:
    """Type the name, label the pairs by plan in the order shown, and export."""
    page.driver.find_element("id", "annotator").send_keys(annotator + "\n")
    for wanted in plan:
        page.label(items, wanted)
    return page.export()


@pytest.mark.browser
def test_labels_from_the_page_merge_into_the_figures_computed_by_hand(tmp_path: Path, browsers: Any) -> None:
    """Keys label blinded pairs, back and reload keep the answers (also when localStorage is lost), export saves
    them, and the merged labels give the ceiling and the judge's agreement computed here by hand."""
    cache = f"cache.dir={tmp_path / 'cache'}"
    run = tmp_path / "run"
    run_here(run, "judge=longer", cache, "progress=off", "bootstrap.resamples=200")
    assert 0 == review(
        ["sample", str(run), "--n", str(N), "--include-gold", "--seed", "3", "--out", str(tmp_path / "r")]
    )
    sample = [json.loads(line) for line in (tmp_path / "r" / "sample.jsonl").read_text(encoding="utf-8").splitlines()]
    items = {i["id"]: i for i in sample}
    page_html = (tmp_path / "r" / "labelling.html").read_text(encoding="utf-8")
    verdicts = {line["id"]: line for line in map(json.loads, (run / "verdicts.jsonl").read_text().splitlines())}
    assert not any(str(verdicts[i]["model_a"]) in page_html for i in items), "model names leak into the page"

    # Annotator one: labels three pairs, goes back and changes the third, reloads, finishes.
    ann = browsers("ann")
    ann.driver.get((tmp_path / "r" / "labelling.html").as_uri())
    ann.driver.find_element("id", "annotator").send_keys("ann\n")
    plan_ann = ["a", "b", "tie", "a", "skip", "b", "a", "b"]
    ann.label(items, "a")
    ann.label(items, "b")
    ann.label(items, "a")  # a slip: meant tie
    ann.press("\ue003")  # Backspace: back to the third pair, its first answer shown
    assert "pair 3 of 8" == ann.shows("position", "pair 3 of 8")
    assert ann.text("current").startswith("your answer: answer "), ann.text("current")  # the slip, shown
    assert "pair 3 of 8" == ann.shows("position", "pair 3 of 8")
    ann.label(items, "tie")
    ann.label(items, "a")
    ann.driver.refresh()
    assert "ann: 4 of 8 labelled, 0 skipped" == ann.shows("progress", "ann: 4 of 8 labelled, 0 skipped")
    assert "pair 5 of 8" == ann.shows("position", "pair 5 of 8")
    # A busy Chromium has dropped a file:// page's localStorage on reload; the tab's own copies keep the answers.
    for lost in ("window.localStorage.clear()", "window.localStorage.clear(); window.sessionStorage.clear()"):
        ann.driver.execute_script(lost)  # then the tab's window.name is the last copy left
        ann.driver.refresh()
        assert "ann: 4 of 8 labelled, 0 skipped" == ann.shows("progress", "ann: 4 of 8 labelled, 0 skipped"), lost
        assert "pair 5 of 8" == ann.shows("position", "pair 5 of 8")
    for wanted in plan_ann[4:]:
        ann.label(items, wanted)
    assert "ann: 7 of 8 labelled, 1 skipped" == ann.shows("progress", "ann: 7 of 8 labelled, 1 skipped")
    exported_ann = ann.export()

    bob = browsers("bob")
    bob.driver.get((tmp_path / "r" / "labelling.html").as_uri())
    plan_bob = ["a", "a", "tie", "b", "b", "b", "tie", "b"]
    exported_bob = label_all(bob, items, "bob", plan_bob)

    order = [line["id"] for line in exported_bob]
    assert [i["id"] for i in sample] == order
    assert plan_ann == [line["label"] for line in exported_ann]
    assert plan_bob == [line["label"] for line in exported_bob]
    assert {"ann"} == {line["annotator"] for line in exported_ann}
    assert all(line["shown_first"] in ("a", "b") for line in exported_ann + exported_bob)

    files = [next((tmp_path / f"downloads-{who}").glob("*.jsonl")) for who in ("ann", "bob")]
    labelled = tmp_path / "labelled.jsonl"
    assert 0 == review(["merge", *map(str, files), "--into", str(run), "--out", str(labelled)])
    s = run_here(tmp_path / "run2", "judge=longer", cache, "data=jsonl", f"data.path={labelled}", "progress=off")
    c = s["calibration"]

    # By hand: the two people on the items both labelled, then the judge (its verdicts, a = "1") against them.
    frame = {"a": "1", "b": "2", "tie": "tie"}
    both = [(frame[x], frame[y], i) for x, y, i in zip(plan_ann, plan_bob, order, strict=True) if "skip" not in (x, y)]
    same = sum(x == y for x, y, _ in both)
    decisive = [(x, y) for x, y, _ in both if "tie" not in (x, y)]
    assert (same / len(both), len(both)) == (c["ceiling"]["agreement"], c["ceiling"]["agreement_n"])
    assert sum(x == y for x, y in decisive) / len(decisive) == c["ceiling"]["decisive_agreement"]
    assert "cohen_kappa" == c["ceiling"]["method"]
    majority = {i: x for x, y, i in both if x == y}
    majority |= {i: frame[y] for x, y, i in zip(plan_ann, plan_bob, order, strict=True) if x == "skip"}
    verdict = {i: verdicts[i]["verdict"] for i in order}
    decisive_majority = [i for i, label in majority.items() if label != "tie"]
    assert sum(verdict[i] == label for i, label in majority.items()) / len(majority) == c["majority"]["agreement"]
    assert (
        sum(verdict[i] == majority[i] for i in decisive_majority) / len(decisive_majority)
        == (c["majority"]["decisive_agreement"])
    )
    assert len(majority) - len(decisive_majority) == c["majority"]["ties_left_out"]
    ann_labels = {i: frame[x] for x, i in zip(plan_ann, order, strict=True) if x != "skip"}
    (ann_figures,) = [a for a in c["per_annotator"] if a["annotator"] == "ann"]
    assert sum(verdict[i] == label for i, label in ann_labels.items()) / len(ann_labels) == ann_figures["agreement"]
    assert all(c["ceiling"][k] is not None for k in ("agreement_ci", "kappa", "kappa_ci"))
