"""The latency estimate (edgedeploy.estimate): the fit's leave-one-model-out error on small
synthetic tables, the CLI on the bundled sample, a chip without enough figures, and the build
gate that accepts an estimate only when asked."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edgedeploy.estimate.calibration import figures_from, params_from
from edgedeploy.estimate.features import FEATURES
from edgedeploy.estimate.fit import Figure, fit_all, leave_one_model_out, loo_summary, nnls
from tests.helpers import run_cli

N = len(FEATURES)


def synthetic_figures(true: np.ndarray, prior: np.ndarray, models: int, column: str = "chipa", noise: np.ndarray | None = None) -> list[Figure]:
    """Models with seeded random features whose latency is exactly features . true (times noise)."""
    rng = np.random.default_rng(7)
    figures = []
    for i in range(models):
        x = np.zeros(N)
        x[:6] = rng.uniform(0.1, 2.0, 6)  # accelerator work only, as in the published models
        x[FEATURES.index("fixed")] = 1.0
        y = float(x @ true) * (noise[i] if noise is not None else 1.0)
        figures.append(Figure(f"m{i:02d}", column, y, x, prior))
    return figures


def test_nnls_matches_the_unconstrained_solution_when_it_is_positive_and_clips_otherwise():
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 1, (20, 3))
    b = a @ np.array([1.0, 2.0, 3.0])
    assert nnls(a, b) == pytest.approx([1.0, 2.0, 3.0], rel=1e-8)
    negative = a @ np.array([1.0, -2.0, 3.0])
    x = nnls(a, negative)
    assert (x >= 0).all() and x[1] == 0.0


def test_leave_one_model_out_never_sees_the_model_it_predicts():
    true = np.linspace(1.0, 2.0, N)
    figures = synthetic_figures(true, prior=true * 2.0, models=12)
    before = {p["model_key"]: p["predicted_ms"] for p in leave_one_model_out(figures, min_figures=8)["chipa"]}
    # Change one model's figure tenfold: its own prediction must not move (it was left out of its
    # fit), every other model's must (that figure is in their fits).
    figures[3] = Figure(figures[3].model_key, "chipa", figures[3].latency_ms * 10, figures[3].features, figures[3].prior)
    after = {p["model_key"]: p["predicted_ms"] for p in leave_one_model_out(figures, min_figures=8)["chipa"]}
    assert after["m03"] == pytest.approx(before["m03"], rel=1e-9)
    assert all(after[k] != pytest.approx(before[k], rel=1e-6) for k in before if k != "m03")


def test_the_fit_recovers_an_exact_linear_chip_better_than_its_wrong_prior():
    true = np.linspace(1.0, 2.0, N)
    figures = synthetic_figures(true, prior=true * 3.0, models=20)
    prior_error = np.median([abs(f.features @ f.prior - f.latency_ms) / f.latency_ms for f in figures])
    (fit,) = fit_all(figures, {"chipa": "fam"}, min_figures=8)
    assert prior_error > 1.5  # the prior alone is 200% off
    assert fit.loo["mdape"] < 0.25 * prior_error
    assert fit.figures == 20 and len(fit.misses) == 3


def test_loo_summary_is_the_median_and_share_of_the_held_out_errors():
    predictions = [{"published_ms": 10.0, "predicted_ms": p} for p in (10.0, 11.0, 8.0, 15.0, 5.0)]
    s = loo_summary(predictions)
    # errors: 0, 10%, 20%, 50%, 50% -> median 20%, 3 of 5 within 25%
    assert s["mdape"] == pytest.approx(0.2)
    assert s["within_25"] == pytest.approx(0.6)
    assert s["ratio_low"] < 1.0 < s["ratio_high"]


def test_a_chip_with_too_few_figures_gets_no_coefficients_and_says_why():
    true = np.linspace(1.0, 2.0, N)
    figures = synthetic_figures(true, true, models=10) + synthetic_figures(true, true, models=5, column="chipb")
    fits = {f.column: f for f in fit_all(figures, {"chipa": "fam", "chipb": "fam"}, min_figures=8)}
    assert fits["chipa"].coefficients is not None
    assert fits["chipb"].coefficients is None
    assert fits["chipb"].reason == "only 5 usable published figures for this chip (an estimate needs at least 8)"


# -- from the published-figures table to params.json, and the CLI on them --------------------

PRIOR = {"family": "fam", "peak_gmac_per_s": 100, "efficiency": {"conv": 0.5, "depthwise": 0.1, "matmul": 0.2}, "elem_m_per_s": 100, "bandwidth_gb_per_s": 2,
         "layer_overhead_ms": 0.05, "cpu_gmac_per_s": 1, "cpu_melem_per_s": 50, "transition_ms": 0.3, "copy_gb_per_s": 1, "fixed_ms": 0.5}


def synthetic_table(models: int, chips: dict[str, float]) -> tuple[list[dict], dict, dict]:
    """A published-figures table, features and priors: `chips` maps chip -> how much slower than its prior it really is."""
    from edgedeploy.estimate.costmodel import as_vector, prior_coefficients

    rng = np.random.default_rng(3)
    priors = {"chips": {c: PRIOR for c in chips}, "shared_columns": {}}
    coefficients = as_vector(prior_coefficients(PRIOR))
    rows, models_features = [], {}
    for i in range(models):
        features = dict.fromkeys(FEATURES, 0.0)
        features.update(acc_conv_gmac=rng.uniform(0.05, 5), acc_dw_gmac=rng.uniform(0, 0.1), acc_mbytes=rng.uniform(1, 30), acc_layers=float(rng.integers(20, 200)), fixed=1.0)
        models_features[f"model{i}"] = {"chips": {c: features for c in chips}}
        for chip, slower in chips.items():
            latency = float(as_vector(features) @ coefficients) * slower * rng.uniform(0.9, 1.1)
            rows.append({"chip": chip, "model_key": f"model{i}", "latency_ms": f"{latency:.3f}", "precision": "int8", "batch": "1", "usable": "yes", "scope": "inference_only", "npu_cores": "1"})
    rows.append({"chip": "chipx", "model_key": "model0", "latency_ms": "3.0", "precision": "fp16", "batch": "1", "usable": "yes"})
    return rows, {"models": models_features}, priors


def test_params_from_a_table_give_each_chip_its_loo_error_or_the_reason():
    rows, features, priors = synthetic_table(12, {"chipa": 2.0})
    priors["chips"]["chipb"] = PRIOR
    figures, left_out, scopes = figures_from(rows, features, priors)
    assert len(figures) == 12 and left_out == {"precision fp16 (the fit uses int8)": 1}
    params = params_from(figures, priors, scopes, min_figures=8)
    a, b = params["chips"]["chipa"], params["chips"]["chipb"]
    assert a["figures"] == 12 and a["loo"]["mdape"] < 0.15  # 10% noise on a chip twice as slow as its prior
    assert b["coefficients"] is None and b["reason"].startswith("no usable published figures")


@pytest.fixture(scope="module")
def fitted_params(tmp_path_factory):
    """params.json fitted to a synthetic table for rk3588 and am62a (four and two times slower than
    their prior) and rk3562 (5 figures: too few); the CLI reads it through EDGEDEPLOY_ESTIMATE_PARAMS."""
    import os

    rows, features, priors = synthetic_table(12, {"rk3588": 4.0, "am62a": 2.0})
    few, few_features, _ = synthetic_table(5, {"rk3562": 1.0})
    priors["chips"]["rk3562"] = PRIOR
    for key, entry in few_features["models"].items():
        features["models"].setdefault(key, {"chips": {}})["chips"].update(entry["chips"])
    figures, _, scopes = figures_from(rows + few, features, priors)
    path = tmp_path_factory.mktemp("params") / "params.json"
    path.write_text(json.dumps(params_from(figures, priors, scopes, min_figures=8)))
    return dict(os.environ, EDGEDEPLOY_ESTIMATE_PARAMS=str(path)), json.loads(path.read_text())


def test_estimate_cli_on_the_sample_prints_the_range_and_the_error(fitted_params):
    env, params = fitted_params
    done = run_cli("estimate", "--target", "rk3588", env=env)
    assert done.returncode == 0, done.stderr
    entry = params["chips"]["rk3588"]
    line = next(l for l in done.stdout.splitlines() if l.startswith("rk3588:"))
    assert " ms (range " in line and f"typically within {100 * entry['loo']['mdape']:.0f}% on this chip, from 12 published figures" in line
    as_json = json.loads(run_cli("estimate", "--target", "rk3588", "--format", "json", env=env).stdout)
    (e,) = as_json["estimates"]
    assert e["is_estimate"] and e["range_ms"][0] <= e["latency_ms"] <= e["range_ms"][1]
    assert e["latency_ms"] == pytest.approx(sum(e["breakdown_ms"].values()), rel=1e-3)


def test_a_chip_with_too_few_figures_gives_the_reason_in_the_cli(fitted_params):
    env, _ = fitted_params
    done = run_cli("estimate", "--target", "rk3562", "--target", "rk3588", "--budget-ms", "1000", env=env)
    assert done.returncode == 0, done.stderr
    row = next(l for l in done.stdout.splitlines() if l.startswith("rk3562 "))
    assert "only 5 usable published figures for this chip (an estimate needs at least 8)" in row
    assert "meet 1000 ms by the estimate: rk3588" in done.stdout


def test_the_shipped_params_give_every_chip_an_estimate_or_a_reason():
    from edgedeploy.estimate import load_params

    shipped = load_params()
    assert len(shipped["chips"]) == 17
    for chip, e in shipped["chips"].items():
        assert (e["coefficients"] is not None and 0 <= e["loo"]["mdape"] and e["figures"] >= shipped["min_figures"]) or e["reason"], chip


def test_estimate_all_marks_the_budget_and_names_why_a_chip_has_none():
    done = run_cli("estimate", "--target", "all", "--budget-ms", "5", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {e["chip"]: e for e in report["estimates"]}
    assert len(rows) == 17
    for e in rows.values():
        if e["latency_ms"] is None:
            assert e["reason"] and e["meets_budget"] is None
        else:
            assert e["meets_budget"] == (e["latency_ms"] <= 5)
    few = [e for e in rows.values() if e["latency_ms"] is None and e["figures"] > 0]
    for e in few:
        assert f"only {e['figures']} usable published figure" in e["reason"]


def test_build_refuses_a_p50_gate_without_allow_estimate_in_one_sentence(tmp_path):
    done = run_cli("build", "--target", "rk3588", "--fail-on", "p50=20ms", "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    message = done.stderr.strip().splitlines()[-1]
    assert "--allow-estimate" in message and "Traceback" not in done.stderr
    assert message.count(". ") == 0 and message.endswith(".")
    assert not (tmp_path / "out").exists()


def test_a_build_p50_gate_with_allow_estimate_judges_the_estimate_and_says_so():
    from edgedeploy.gates import evaluate_build, parse_gate

    gate = parse_gate("p50=20ms", "build", allow_estimate=True)
    report = {"target": {"chip": "rk3588"}, "estimate": {"latency_ms": 12.0, "loo_mdape": 0.2}}
    (result,) = evaluate_build([gate], report)
    assert result.passed and result.value == pytest.approx(12000.0)
    assert "estimated, not measured" in result.reason and "typically within 20%" in result.source
    (missing,) = evaluate_build([gate], {"target": {"chip": "esp32s3"}, "estimate": {"latency_ms": None, "reason": "only 3 usable published figures"}})
    assert not missing.passed and "only 3 usable published figures" in missing.reason


def test_the_python_api_returns_typed_estimates(fitted_params, monkeypatch):
    import edgedeploy
    import edgedeploy.estimate.features  # noqa: F401 - the subpackage imported must not hide the function

    env, params = fitted_params
    monkeypatch.setenv("EDGEDEPLOY_ESTIMATE_PARAMS", env["EDGEDEPLOY_ESTIMATE_PARAMS"])
    lines = []
    result = edgedeploy.estimate(chips=["rk3588", "rk3562"], budget_ms=1000, progress=lines.append)
    fast, few = result.chip("rk3588"), result.chip("rk3562")
    assert fast.latency_ms is not None and fast.range_ms[0] <= fast.latency_ms <= fast.range_ms[1]
    assert fast.loo_mdape == pytest.approx(params["chips"]["rk3588"]["loo"]["mdape"]) and fast.figures == 12
    assert few.latency_ms is None and "only 5 usable" in few.reason
    assert result.meeting() == ["rk3588"] and result.to_dict()["estimates"][0]["is_estimate"]
    assert lines and "bundled sample" in lines[0]


def test_a_build_report_carries_the_estimate_and_a_p50_gate_judges_it_when_allowed(fitted_params, tmp_path):
    """am62a builds here as a generated project (no TI tools): quick, and its report has every section."""
    env, params = fitted_params
    done = run_cli("build", "--target", "am62a", "--out", str(tmp_path), "--allow-generated", "--fail-on", "p50=100s", "--allow-estimate", "--format", "json", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    (entry,) = json.loads(done.stdout)["builds"]
    section = entry["report"]["estimate"]
    assert section["is_estimate"] and section["latency_ms"] > 0 and section["figures"] == 12
    from edgedeploy.report.schemas import validate

    validate(entry["report"])  # report-1.json, its estimate section by estimate-1.json
    (gate,) = entry["gates"]["results"]
    assert gate["passed"] and gate["value"] == pytest.approx(section["latency_ms"] * 1000)
    assert "estimated, not measured" in gate["reason"] and "not a measurement" in gate["source"]
    shown = run_cli("report", entry["artifact"], env=env)
    assert shown.returncode == 0, shown.stderr
    assert f"am62a: estimated (not measured): {section['sentence']}" in shown.stdout


def test_the_committed_params_are_the_fit_of_the_committed_figures_and_features():
    """CI re-runs the fit and its leave-one-out error from the committed table and features (no models needed)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "estimate" / "fit.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "params.json is up to date" in done.stderr


def test_the_params_check_forgives_last_bits_and_nothing_else():
    """fit.py --check compares floats to 1e-9 relative (another CPU's sums differ in the last bits), and a real change fails."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("fit_script", Path(__file__).resolve().parent.parent / "scripts" / "estimate" / "fit.py")
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    committed = {"loo": {"mdape": 0.22970057696534524, "figures": 9}, "misses": [{"model_key": "m", "predicted_ms": 227.257285}]}
    assert fit.same_fit(committed, {"loo": {"mdape": 0.2297005769653454, "figures": 9}, "misses": [{"model_key": "m", "predicted_ms": 227.25728499999997}]})
    assert not fit.same_fit(committed, {"loo": {"mdape": 0.2298, "figures": 9}, "misses": [{"model_key": "m", "predicted_ms": 227.257285}]})
    assert not fit.same_fit(committed, {"loo": {"mdape": 0.22970057696534524, "figures": 10}, "misses": [{"model_key": "m", "predicted_ms": 227.257285}]})
    assert not fit.same_fit(committed, {"loo": {"mdape": 0.22970057696534524, "figures": 9}, "misses": []})


def test_estimate_reuses_the_toolchains_own_estimate_from_an_earlier_build_of_the_same_model(tmp_path):
    """imx93's Vela figure is read from ARTIFACTS/<model>/imx93/report.json when its sha256 is the model's."""
    import hashlib
    import os

    from edgedeploy.sample import sample_model_path

    sha = hashlib.sha256(sample_model_path().read_bytes()).hexdigest()
    folder = tmp_path / "out" / "mnist_cnn" / "imx93"
    folder.mkdir(parents=True)
    report = {"model": {"sha256": sha}, "toolchain_verdict": {"estimates": {"estimated_inference_time_us": 1234.0}}}
    (folder / "report.json").write_text(json.dumps(report))
    wide = dict(os.environ, COLUMNS="500")
    done = run_cli("estimate", "--target", "imx93", "--artifacts", str(tmp_path / "out"), env=wide)
    assert done.returncode == 0, done.stderr
    assert "imx93: Vela's own estimate: 1.2 ms" in done.stdout and str(folder / "report.json") in done.stdout
    report["model"]["sha256"] = "0" * 64  # another model's build: not used
    (folder / "report.json").write_text(json.dumps(report))
    again = run_cli("estimate", "--target", "imx93", "--artifacts", str(tmp_path / "out"), "--format", "json")
    (entry,) = json.loads(again.stdout)["estimates"]
    assert entry["toolchain_estimate"]["latency_ms"] is None and "found no build of this model" in entry["toolchain_estimate"]["not_run"]


def test_audit_of_several_chips_carries_the_estimate_in_every_format(fitted_params, tmp_path):
    env, params = fitted_params
    as_json = json.loads(run_cli("audit", "--target", "rk3588", "--target", "rk3562", "--format", "json", env=env).stdout)
    by_chip = {a["chip"]: a["estimate"] for a in as_json["audits"]}
    assert by_chip["rk3588"]["latency_ms"] > 0 and by_chip["rk3562"]["latency_ms"] is None
    text = run_cli("audit", "--target", "rk3588", "--target", "rk3562", env=dict(env, COLUMNS="300")).stdout
    row = next(l for l in text.splitlines() if l.startswith("est. latency"))
    assert f"+-{100 * params['chips']['rk3588']['loo']['mdape']:.0f}%" in row and row.rstrip().endswith("-")
    markdown = run_cli("audit", "--target", "rk3588", "--target", "rk3562", "--format", "md", env=env).stdout
    from edgedeploy.escape import markdown_cell

    assert f"Estimated latency (not measured): {markdown_cell(by_chip['rk3588']['sentence'])}" in markdown
