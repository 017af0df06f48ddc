"""The people's number end to end: a run whose labels came from a review sample corrects its win rate by them, the
review loop draws probability samples and plans their size, the gate can require and threshold the corrected
figure, and every way to hand in a design that cannot stand behind an estimate is one line or a stated refusal.

The expected values come from outside the code under test: ppi-python's own estimate on arrays read back from the
run's verdicts.jsonl, the sample's sample.json and the dataset's labels (marked oracle); or from the files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgebias import check
from judgebias.review.__main__ import main as review
from tests.helpers import REPO, write_items
from tests.reliability.helpers import run_here, verdict_lines

pytestmark = pytest.mark.slow

QUICK = ("report=false", "progress=off", "bootstrap.resamples=200")
ORACLES = REPO / ".venv-oracles" / "bin" / "python"


def labelled_pairs(count: int) -> list[dict[str, Any]]:
    """`count` items with a gold label each, the longer answer mostly (not always) the better one."""
    items = []
    for i in range(count):
        short, long = f"answer {i}", f"answer {i} " + "with more detail " * (1 + i % 3)
        a, b = (short, long) if i % 2 else (long, short)
        human = ("2" if i % 2 else "1") if i % 5 else ("1" if i % 2 else "2")  # every fifth the shorter wins
        items.append(
            {"id": f"i{i}", "question": f"Question {i}?", "a": a, "b": b, "human": "tie" if i % 11 == 0 else human}
        )
    return items


def base_and_sample(tmp_path: Path, *, count: int = 200, strategy: str = "random", n: str = "40") -> tuple[Path, Path]:
    """A run of the noisy judge on labelled data, and a review sample of it (its sample.json)."""
    data = write_items(tmp_path / "items.jsonl", labelled_pairs(count))
    base = tmp_path / "base"
    run_here(base, *QUICK, "data=jsonl", f"data.path={data}", "judge.first_bias=0.3")
    assert 0 == review(["sample", str(base), "--n", n, "--strategy", strategy, "--include-gold", "--seed", "3"])
    return data, base / "review" / "sample.json"


def corrected_run(tmp_path: Path, data: Path, sample: Path, *more: str) -> dict[str, Any]:
    return run_here(
        tmp_path / "corrected", *QUICK, "data=jsonl", f"data.path={data}", "judge.first_bias=0.3",
        f"calibration.sample={sample}", *more,
    )  # fmt: skip


@pytest.mark.oracle
@pytest.mark.parametrize("strategy", ["random", "uncertain"])
def test_the_corrected_win_rate_is_ppi_pythons_on_the_files_arrays(tmp_path: Path, strategy: str) -> None:
    """The labels drawn by a review sample (uniform, or Poisson by the judge's uncertainty) correct the win rate:
    the estimate and its 95% interval are ppi-python's on the arrays the files hold (people's scores from the
    dataset's labels on the drawn items, the judge's from verdicts.jsonl, weights 1/π and 1/(1 − π) from
    sample.json), and so are the labels-only ones (λ = 0)."""
    if not ORACLES.exists():
        pytest.skip("the other tools' code is not installed: tools/install-oracles.sh makes .venv-oracles")
    data, sample = base_and_sample(tmp_path, strategy=strategy)
    summary = corrected_run(tmp_path, data, sample)
    info = json.loads(sample.read_text(encoding="utf-8"))
    drawn, chance = set(info["ids"]), info["probabilities"]
    score = {"1": 1.0, "tie": 0.5, "2": 0.0}
    labels = {item["id"]: score[item["human"]] for item in labelled_pairs(200)}
    lines = verdict_lines(tmp_path / "corrected")
    y = [labels[line["id"]] for line in lines if line["id"] in drawn]
    yhat = [score[line["verdict"]] for line in lines if line["id"] in drawn]
    yhu = [score[line["verdict"]] for line in lines if line["id"] not in drawn]
    w = [1 / chance[line["id"]] for line in lines if line["id"] in drawn]
    wu = [1 / (1 - chance[line["id"]]) for line in lines if line["id"] not in drawn]
    code = (
        "import json, sys; import numpy as np; from ppi_py import ppi_mean_ci, ppi_mean_pointestimate\n"
        "a = [np.array(v) for v in json.load(open(sys.argv[1]))]\n"
        "out = []\n"
        "for lam in (None, 0.0):\n"
        "    p = ppi_mean_pointestimate(a[0], a[1], a[2], lam=lam, w=a[3], w_unlabeled=a[4])\n"
        "    lo, hi = ppi_mean_ci(a[0], a[1], a[2], alpha=0.05, lam=lam, w=a[3], w_unlabeled=a[4])\n"
        "    out.append([float(np.ravel(p)[0]), float(np.ravel(lo)[0]), float(np.ravel(hi)[0])])\n"
        "print(json.dumps(out))"
    )
    arrays = tmp_path / "arrays.json"
    arrays.write_text(json.dumps([y, yhat, yhu, w, wu]), encoding="utf-8")
    done = subprocess.run([str(ORACLES), "-c", code, str(arrays)], capture_output=True, text=True, check=False)
    if "No module named 'ppi_py'" in done.stderr:
        pytest.skip("ppi-python is not installed in .venv-oracles (tools/install-oracles.sh)")
    (point, low, high), (alone, alone_low, alone_high) = json.loads(done.stdout.strip().splitlines()[-1])

    record = summary["corrected"]["figures"]["win_rate"]
    assert summary["corrected_win_rate"] == pytest.approx(point, abs=1e-9)
    assert summary["ci"]["corrected_win_rate"] == pytest.approx([low, high], abs=1e-6)
    assert [record["labels_only"], *record["labels_only_ci"]] == pytest.approx([alone, alone_low, alone_high], abs=1e-6)
    assert (len(y), len(yhu)) == (summary["corrected"]["labelled"], summary["corrected"]["unlabelled"])
    assert {"kind": strategy, "source": str(sample)} == {
        k: summary["corrected"]["design"][k] for k in ("kind", "source")
    }


def test_every_item_labelled_gives_what_people_said_and_the_judges_error(tmp_path: Path) -> None:
    """No design and a label on every item: the people's win rate is the labels' mean (counted here from the
    dataset), and the note says how far the judge's own win rate is from it."""
    data = write_items(tmp_path / "items.jsonl", labelled_pairs(60))
    printed: list[str] = []
    from judgebias.engine.runner import run_experiment
    from tests.reliability.helpers import config_of

    summary = run_experiment(
        config_of(*QUICK, "data=jsonl", f"data.path={data}"), tmp_path / "run", echo=printed.append
    )

    score = {"1": 1.0, "tie": 0.5, "2": 0.0}
    by_hand = sum(score[item["human"]] for item in labelled_pairs(60)) / 60
    assert summary["corrected_win_rate"] == pytest.approx(by_hand)
    assert summary["corrected"]["design"]["kind"] == "uniform" and summary["corrected"]["unlabelled"] == 0
    judge_error = summary["corrected"]["figures"]["win_rate"]["judge_error"]
    assert judge_error == pytest.approx(summary["win_rate"] - by_hand)
    line = next(line for line in "\n".join(printed).splitlines() if "people's win rate" in line)
    assert "every item labelled: what people said, on 60 items" in line


def test_too_few_labels_are_a_stated_refusal_not_a_number(tmp_path: Path) -> None:
    """A sample of 6 labels (calibration.min_labels is 10): no corrected figure, and the summary and the gate say
    why; --require-corrected fails the job."""
    data, sample = base_and_sample(tmp_path, n="6")
    summary = corrected_run(tmp_path, data, sample)
    assert summary["corrected_win_rate"] is None
    assert "only 6 labelled items (at least 10 needed" in summary["corrected"]["refused"]
    assert "not corrected: only 6 labelled items" in summary["corrected_win_rate_note"]
    assert 1 == check.main([str(tmp_path / "corrected"), "--require-corrected"])


def test_the_gate_thresholds_the_corrected_win_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--min-corrected-win-rate reads the people's win rate: a bound just above it fails, just below passes."""
    data, sample = base_and_sample(tmp_path)
    value = corrected_run(tmp_path, data, sample)["corrected_win_rate"]
    run = str(tmp_path / "corrected")
    assert 0 == check.main([run, "--min-corrected-win-rate", f"{value - 0.01:.4f}", "--require-corrected"])
    assert 1 == check.main([run, "--min-corrected-win-rate", f"{value + 0.01:.4f}"])
    assert "corrected_win_rate = " in capsys.readouterr().out


def test_the_gate_fails_a_drop_of_the_people_s_win_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A candidate whose answers people like less (a's answers now lose most labelled items, written by hand) fails
    `--max-drop corrected_win_rate=0.02` against the base, paired on the same ids; the base against itself passes."""
    pairs = labelled_pairs(120)
    data = write_items(tmp_path / "items.jsonl", pairs)
    worse = [item | {"human": "2" if int(item["id"][1:]) % 4 else item["human"]} for item in pairs]
    worse_data = write_items(tmp_path / "worse.jsonl", worse)
    base, cand = tmp_path / "base", tmp_path / "cand"
    first = run_here(base, *QUICK, "data=jsonl", f"data.path={data}")
    second = run_here(cand, *QUICK, "data=jsonl", f"data.path={worse_data}")
    assert second["corrected_win_rate"] < first["corrected_win_rate"] - 0.2
    gate = ["--baseline", str(base), "--allow-changed-items", "--max-drop", "corrected_win_rate=0.02"]
    assert 1 == check.main([str(cand), *gate])
    out = capsys.readouterr().out
    assert "FAIL" in out and "corrected_win_rate dropped against the baseline" in out, out
    assert 0 == check.main([str(base), *gate])


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda info: info | {"probabilities": {**info["probabilities"], info["ids"][0]: 0}}, "a probability above 0"),
        (lambda info: {k: v for k, v in info.items() if k != "probabilities"}, "written before samples recorded"),
        (
            lambda info: (
                info | {"ids": [*info["ids"], "nope"], "probabilities": {**info["probabilities"], "nope": 0.5}}
            ),
            "labels on items the run does not have",
        ),
        (
            lambda info: info | {"item_sha256": {**info["item_sha256"], info["ids"][0]: "0" * 16}},
            "another dataset version",
        ),
    ],
    ids=["probability-0", "no-design", "item-not-in-run", "changed-item"],
)
def test_a_design_that_cannot_stand_behind_an_estimate_is_one_line(tmp_path: Path, edit: Any, expected: str) -> None:
    """A sample.json edited to give an item probability 0, with no design, naming an item the data does not have,
    or drawn from another version of an item: exit 2 in one line, before anything is judged."""
    from tests.helpers import InProcessCli

    data, sample = base_and_sample(tmp_path)
    info = json.loads(sample.read_text(encoding="utf-8"))
    sample.write_text(json.dumps(edit(info)), encoding="utf-8")
    cli = InProcessCli(tmp_path / "cli")
    (tmp_path / "cli").mkdir()
    result = cli("data=jsonl", f"data.path={data}", f"calibration.sample={sample}", "report=false")
    assert 2 == result.code, result
    assert 1 == len(result.stderr.strip().splitlines()) and expected in result.stderr, result.stderr
    assert not (result.run_dir / "verdicts.jsonl.part").exists()


def test_review_plan_and_an_auto_sized_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`review plan` says how many labels reach a width (a narrower width needs more; from no design it plans on the
    labels so far); `review sample --n auto --width W` draws about that many more."""
    data, sample = base_and_sample(tmp_path)
    corrected_run(tmp_path, data, sample)
    run = str(tmp_path / "corrected")
    assert 0 == review(["plan", run, "--width", "0.2"])
    wide = capsys.readouterr().out
    assert 0 == review(["plan", run, "--width", "0.15"])
    narrow = capsys.readouterr().out
    needed = lambda text: int(text.split("needs about ")[1].split(" labels")[0])  # noqa: E731
    assert "40 labels so far" in wide and needed(narrow) > needed(wide)
    assert 0 == review(
        ["sample", run, "--n", "auto", "--width", "0.2", "--out", str(tmp_path / "more"), "--include-gold"]
    )
    drawn = json.loads((tmp_path / "more" / "sample.json").read_text(encoding="utf-8"))["n"]
    assert drawn == max(1, needed(wide) - 40)


def test_an_uncertain_sample_is_a_probability_design(tmp_path: Path) -> None:
    """`review sample --strategy uncertain` records every candidate's probability, none 0, the inconsistent items'
    higher than the consistent ones' (read against the run's own verdict lines), summing to the size asked."""
    _, sample = base_and_sample(tmp_path, strategy="uncertain", n="30")
    info = json.loads(sample.read_text(encoding="utf-8"))
    chance = info["probabilities"]
    lines = {line["id"]: line for line in verdict_lines(tmp_path / "base")}
    assert set(chance) == set(lines) and min(chance.values()) > 0
    assert sum(chance.values()) == pytest.approx(30.0)
    inconsistent = [chance[i] for i, line in lines.items() if line["consistent"] is False]
    consistent = [chance[i] for i, line in lines.items() if line["consistent"] is True]
    assert inconsistent and consistent and min(inconsistent) > max(consistent)
    assert np.isclose(len(info["ids"]), 30, atol=15)
