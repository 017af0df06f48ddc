"""Prediction-powered estimates against the method's authors' own package (ppi-python 0.2.3, in .venv-oracles): the
same arrays give the same point estimate (to 1e-9) and the same 95% interval (to 1e-6) through judgebias and through
`ppi_mean_ci` / `ppi_logistic_ci` (whose default is a 90% interval: alpha=0.05 is passed), with and without weights.
The decisive win rate (a ratio) is checked through the package's mean: at judgebias's estimate, the rectified mean of
A - θB is zero, and the interval is the package's interval of that mean divided by the estimate of E[B]."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgebias.figures.ppi import ppi_logistic, ppi_mean, ppi_ratio
from tests.helpers import REPO

pytestmark = pytest.mark.oracle

ORACLES = REPO / ".venv-oracles" / "bin" / "python"

PPI_MEAN = """
import json, sys
import numpy as np
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
cases = json.load(open(sys.argv[1]))
out = []
for case in cases:
    a = {k: (np.array(v) if v is not None else None) for k, v in case.items() if k != "lam"}
    kw = {"w": a["w"], "w_unlabeled": a["wu"], "lam": case.get("lam")}
    point = ppi_mean_pointestimate(a["y"], a["yhat"], a["yhu"], **kw)
    low, high = ppi_mean_ci(a["y"], a["yhat"], a["yhu"], alpha=0.05, **kw)
    out.append([float(np.ravel(point)[0]), float(np.ravel(low)[0]), float(np.ravel(high)[0])])
print(json.dumps(out))
"""

PPI_LOGISTIC = """
import json, sys
import numpy as np
from ppi_py import ppi_logistic_ci
cases = json.load(open(sys.argv[1]))
out = []
for case in cases:
    a = {k: (np.array(v) if v is not None else None) for k, v in case.items()}
    low, high = ppi_logistic_ci(a["x"], a["y"], a["yhat"], a["xu"], a["yhu"], alpha=0.05, w=a["w"], w_unlabeled=a["wu"])
    out.append([list(map(float, low)), list(map(float, high))])
print(json.dumps(out))
"""


def oracle(code: str, cases: list[dict[str, Any]], tmp_path: Path) -> Any:
    """Run `code` with ppi-python on the cases written to a file; the JSON it prints."""
    if not ORACLES.exists():
        pytest.skip("the other tools' code is not installed: tools/install-oracles.sh makes .venv-oracles")
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    done = subprocess.run([str(ORACLES), "-c", code, str(path)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and "No module named 'ppi_py'" in done.stderr:
        pytest.skip("ppi-python is not installed in .venv-oracles (tools/install-oracles.sh)")
    assert 0 == done.returncode, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def mean_case(seed: int, weighted: bool, soft: bool) -> dict[str, Any]:
    """A judge agreeing with people about 70% of the time on 80 labelled and 600 unlabelled items; people's scores
    1 / ½ / 0, the judge's a verdict's score or a probability; weights of a design when `weighted`."""
    rng = np.random.default_rng(seed)
    y = rng.choice([0.0, 0.5, 1.0], size=80, p=[0.45, 0.1, 0.45])
    agree = rng.random(80) < 0.7
    yhat = np.where(agree, y, rng.choice([0.0, 0.5, 1.0], size=80))
    yhu = rng.choice([0.0, 0.5, 1.0], size=600, p=[0.35, 0.15, 0.5])
    if soft:
        yhat = np.clip(yhat + rng.normal(0, 0.1, 80), 0, 1)
        yhu = np.clip(yhu + rng.normal(0, 0.1, 600), 0, 1)
    return {
        "y": y.tolist(),
        "yhat": yhat.tolist(),
        "yhu": yhu.tolist(),
        "w": rng.uniform(1.0, 9.0, 80).tolist() if weighted else None,
        "wu": rng.uniform(1.0, 1.3, 600).tolist() if weighted else None,
    }


def games(rng: np.random.Generator, count: int) -> np.ndarray:
    """Bradley–Terry games of four models as design rows: +1 for the first, -1 for the second (model 0 fixed at 0)."""
    i = rng.integers(0, 4, count)
    j = (i + rng.integers(1, 4, count)) % 4
    x = np.zeros((count, 4))
    x[np.arange(count), i] += 1.0
    x[np.arange(count), j] -= 1.0
    return x[:, 1:]


def test_the_prediction_powered_mean_is_ppi_pythons(tmp_path: Path) -> None:
    """Twelve cases (verdict scores or probabilities, with and without a design's weights, power-tuned, plain PPI
    and the labels alone): the same estimate to 1e-9 and the same 95% interval to 1e-6."""
    cases = [
        mean_case(seed, weighted, soft) for seed in range(3) for weighted in (False, True) for soft in (False, True)
    ]
    cases += [case | {"lam": lam} for case in cases[:2] for lam in (0.0, 1.0)]
    theirs = oracle(PPI_MEAN, cases, tmp_path)
    for case, (point, low, high) in zip(cases, theirs, strict=True):
        a = {k: (np.array(v) if v is not None else None) for k, v in case.items() if k != "lam"}
        ours = ppi_mean(a["y"], a["yhat"], a["yhu"], lam=case.get("lam"), w=a["w"], w_unlabelled=a["wu"])
        assert ours.value == pytest.approx(point, abs=1e-9)
        assert [ours.low, ours.high] == pytest.approx([low, high], abs=1e-6)


def test_the_decisive_ratio_solves_ppi_pythons_rectified_mean(tmp_path: Path) -> None:
    """The decisive win rate E[A]/E[B]: at judgebias's θ̂ and λ, ppi-python's rectified mean of A − θ̂B is 0, and
    its interval of that mean divided by the estimate of E[B] is judgebias's interval of θ̂."""
    rng = np.random.default_rng(7)
    label = rng.choice(["1", "2", "tie"], size=90, p=[0.45, 0.4, 0.15])
    verdict = np.where(rng.random(90) < 0.7, label, rng.choice(["1", "2", "tie"], size=90))
    unlabelled = rng.choice(["1", "2", "tie"], size=700, p=[0.5, 0.3, 0.2])
    a, b = (label == "1").astype(float), (label != "tie").astype(float)
    ah, bh = (verdict == "1").astype(float), (verdict != "tie").astype(float)
    ahu, bhu = (unlabelled == "1").astype(float), (unlabelled != "tie").astype(float)
    w, wu = rng.uniform(1, 5, 90), rng.uniform(1, 1.2, 700)

    ours = ppi_ratio((a, ah, ahu), (b, bh, bhu), w=w, w_unlabelled=wu)

    d, dh, dhu = a - ours.value * b, ah - ours.value * bh, ahu - ours.value * bhu
    case = {
        "y": d.tolist(),
        "yhat": dh.tolist(),
        "yhu": dhu.tolist(),
        "w": w.tolist(),
        "wu": wu.tolist(),
        "lam": ours.lam,
    }
    ((point, low, high),) = oracle(PPI_MEAN, [case], tmp_path)
    wn, wun = w / w.mean(), wu / wu.mean()
    bottom = ours.lam * (wun * bhu).mean() + (wn * (b - ours.lam * bh)).mean()
    assert point == pytest.approx(0.0, abs=1e-12)
    assert [ours.low, ours.high] == pytest.approx([ours.value + low / bottom, ours.value + high / bottom], abs=1e-9)


def test_the_prediction_powered_logistic_fit_is_ppi_pythons(tmp_path: Path) -> None:
    """Bradley–Terry games of four models (the first fixed at 0), 150 labelled and 1,200 unlabelled, people's
    outcomes against a judge right 75% of the time, with and without weights: the same 95% interval of every
    coefficient (ppi-python's own fit stops at its optimizer's tolerance: 1e-5 on the ends)."""
    rng = np.random.default_rng(3)
    strength = np.array([0.5, -0.3, 1.0])

    x, xu = games(rng, 150), games(rng, 1200)
    y = (rng.random(150) < 1 / (1 + np.exp(-(x @ strength)))).astype(float)
    yhat = np.where(rng.random(150) < 0.75, y, 1 - y)
    yhu = (rng.random(1200) < 1 / (1 + np.exp(-(xu @ strength)))).astype(float)
    cases = []
    for weighted in (False, True):
        w, wu = (rng.uniform(0.5, 3, 150), rng.uniform(0.5, 2, 1200)) if weighted else (None, None)
        cases.append(
            {
                "x": x.tolist(), "y": y.tolist(), "yhat": yhat.tolist(), "xu": xu.tolist(), "yhu": yhu.tolist(),
                "w": None if w is None else w.tolist(), "wu": None if wu is None else wu.tolist(),
            }
        )  # fmt: skip
    theirs = oracle(PPI_LOGISTIC, cases, tmp_path)
    for case, (low, high) in zip(cases, theirs, strict=True):
        a = {k: (np.array(v) if v is not None else None) for k, v in case.items()}
        fit = ppi_logistic(a["x"], a["y"], a["yhat"], a["xu"], a["yhu"], w=a["w"], w_unlabelled=a["wu"])
        assert fit.converged
        for k in range(3):
            _, our_low, our_high = fit.interval(np.eye(3)[k])
            assert [our_low, our_high] == pytest.approx([low[k], high[k]], abs=1e-5)


def collapsed(*columns: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct rows of these columns (one row of each 2-D column) and how many items each stands for."""
    table = np.column_stack([c.reshape(len(c), -1) for c in columns])
    rows, counts = np.unique(table, axis=0, return_counts=True)
    out, start = [], 0
    for c in columns:
        width = 1 if c.ndim == 1 else c.shape[1]
        part = rows[:, start : start + width]
        out.append(part[:, 0] if c.ndim == 1 else part)
        start += width
    return out, counts.astype(np.int64)


def test_alike_items_counted_once_give_ppi_pythons_numbers_on_every_item(tmp_path: Path) -> None:
    """How a run holds a million items: alike items (the same label, verdict, weight; the same game) as one row
    with a count. ppi-python on the items written out one by one and judgebias on the counted rows give the same
    mean, ratio and logistic intervals (a design's weights of a few values, as a review sample's are)."""
    rng = np.random.default_rng(11)
    y = rng.choice([0.0, 0.5, 1.0], size=300, p=[0.45, 0.1, 0.45])
    yhat = np.where(rng.random(300) < 0.7, y, rng.choice([0.0, 0.5, 1.0], size=300))
    yhu = rng.choice([0.0, 0.5, 1.0], size=3000, p=[0.35, 0.15, 0.5])
    w, wu = rng.choice([1.0, 4.0], size=300), rng.choice([1.0, 1.25], size=3000)
    case = {"y": y.tolist(), "yhat": yhat.tolist(), "yhu": yhu.tolist(), "w": w.tolist(), "wu": wu.tolist()}
    ((point, low, high),) = oracle(PPI_MEAN, [case], tmp_path)
    (cy, cyhat, cw), counts = collapsed(y, yhat, w)
    (cyhu, cwu), counts_u = collapsed(yhu, wu)
    assert len(counts) < 20 and len(counts_u) < 10
    ours = ppi_mean(cy, cyhat, cyhu, w=cw, w_unlabelled=cwu, counts=counts, counts_unlabelled=counts_u)
    assert ours.value == pytest.approx(point, abs=1e-9)
    assert [ours.low, ours.high] == pytest.approx([low, high], abs=1e-6)

    a, b = (y == 1.0).astype(float), (y != 0.5).astype(float)
    ah, bh, ahu, bhu = (yhat == 1.0) * 1.0, (yhat != 0.5) * 1.0, (yhu == 1.0) * 1.0, (yhu != 0.5) * 1.0
    whole = ppi_ratio((a, ah, ahu), (b, bh, bhu), w=w, w_unlabelled=wu)
    (ca, cah, cb, cbh, cw), counts = collapsed(a, ah, b, bh, w)
    (cahu, cbhu, cwu), counts_u = collapsed(ahu, bhu, wu)
    counted = ppi_ratio(
        (ca, cah, cahu), (cb, cbh, cbhu), w=cw, w_unlabelled=cwu, counts=counts, counts_unlabelled=counts_u
    )
    d, dh, dhu = a - counted.value * b, ah - counted.value * bh, ahu - counted.value * bhu
    ratio_case = {"y": d.tolist(), "yhat": dh.tolist(), "yhu": dhu.tolist(), "w": w.tolist(), "wu": wu.tolist()}
    ((zero, _, _),) = oracle(PPI_MEAN, [ratio_case | {"lam": counted.lam}], tmp_path)
    assert zero == pytest.approx(0.0, abs=1e-12)  # ppi-python's rectified mean vanishes at the counted θ̂
    assert [counted.value, counted.low, counted.high] == pytest.approx([whole.value, whole.low, whole.high], abs=1e-9)

    x, xu = games(rng, 400), games(rng, 3000)
    outcome = (rng.random(400) < 1 / (1 + np.exp(-(x @ np.array([0.5, -0.3, 1.0]))))).astype(float)
    guess, guess_u = np.where(rng.random(400) < 0.75, outcome, 1 - outcome), (rng.random(3000) < 0.5) * 1.0
    w, wu = rng.choice([1.0, 2.5], size=400), rng.choice([1.0, 1.5], size=3000)
    logistic_case = {
        "x": x.tolist(), "y": outcome.tolist(), "yhat": guess.tolist(), "xu": xu.tolist(), "yhu": guess_u.tolist(),
        "w": w.tolist(), "wu": wu.tolist(),
    }  # fmt: skip
    ((their_low, their_high),) = oracle(PPI_LOGISTIC, [logistic_case], tmp_path)
    (cx, cy, cyhat, cw), counts = collapsed(x, outcome, guess, w)
    (cxu, cyhu, cwu), counts_u = collapsed(xu, guess_u, wu)
    assert len(counts) < 100 and len(counts_u) <= 48  # 12 games, 2 guesses, 2 weights
    fit = ppi_logistic(cx, cy, cyhat, cxu, cyhu, w=cw, w_unlabelled=cwu, counts=counts, counts_unlabelled=counts_u)
    assert fit.converged
    for k in range(3):
        _, our_low, our_high = fit.interval(np.eye(3)[k])
        assert [our_low, our_high] == pytest.approx([their_low[k], their_high[k]], abs=1e-5)
