"""``graphmem sweep``, ``fit`` (``fit --train`` too) and ``devices`` through typer's CliRunner:
exit codes and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import graphmem

from builders import BERT as BERT_PATH, CNN as CNN_PATH, TRAIN_CNN as TRAIN_CNN_PATH

from builders import outcome as run

CNN, BERT, TRAIN_CNN = str(CNN_PATH), str(BERT_PATH), str(TRAIN_CNN_PATH)



def test_sweep_json_rows_equal_analyze() -> None:
    code, out, _ = run("sweep", CNN, "--dim", "batch=1,2,4,8,16", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema_version"] == 1 and doc["dim"] == "batch"
    assert [r["value"] for r in doc["rows"]] == [1, 2, 4, 8, 16]
    for row in doc["rows"]:
        a = graphmem.analyze(CNN, dims=row["dims"])
        assert (row["weights_bytes"], row["activations_peak_bytes"], row["lower_bound_bytes"],
                row["total_bytes"]) == (a.weights.bytes, a.activations.peak_bytes,
                                        a.activations.lower_bound_bytes, a.total_bytes)
        assert row["flops"] is None or row["flops"] > 0
    fit = doc["fit"]
    assert fit["degree"] == 1 and fit["per_unit2_bytes"] == 0.0
    assert fit["fixed_bytes"] == pytest.approx(doc["rows"][0]["weights_bytes"], abs=1e-3)
    assert set(fit["parts"]) == {"weights", "activations", "inputs"}


def test_sweep_table_with_fixed_dim() -> None:
    code, out, _ = run("sweep", BERT, "--dim", "batch=2", "--dim", "seq=16..128:x2")
    assert code == 0
    assert "fit: requested total ≈" in out and "worst residual" in out and "fixed" in out


@pytest.mark.parametrize("args, needle", [
    (["--dim", "batch=1,,2"], "empty value"),
    (["--dim", "batch=a"], "not an integer"),
    (["--dim", "batch=1,a"], "not an integer"),
    (["--dim", "batch=1..99999999999999999999"], "overflows int64"),
    (["--dim", "batch=1,9223372036854775808"], "overflows int64"),
    (["--dim", "bach=1,2"], "its dims: batch"),
    (["--dim", "batch=7"], "exactly one dim with several values"),
    ([], "exactly one dim with several values"),
])
def test_sweep_bad_input(args: list[str], needle: str) -> None:
    code, out, err = run("sweep", CNN, *args)
    assert code == 2 and out == ""
    assert err.startswith("graphmem: error:") and needle in err


def test_sweep_two_swept_dims_and_unbound() -> None:
    code, _, err = run("sweep", BERT, "--dim", "batch=1,2", "--dim", "seq=8,16")
    assert code == 2 and "several: batch, seq" in err
    code, _, err = run("sweep", BERT, "--dim", "batch=1,2")
    assert code == 2 and "unbound" in err and "seq" in err


def test_fit_solves_exactly() -> None:
    code, out, _ = run("fit", "--by", "requested", CNN, "--memory", "5MiB", "--overhead", "100KiB", "--json")
    assert code == 0
    doc = json.loads(out)
    n = doc["largest"]
    assert doc["mode"] == "solve" and doc["solve"] == "batch" and doc["monotone"] is True
    budget, overhead = 5 << 20, 100 << 10
    assert (doc["budget_bytes"], doc["overhead_bytes"]) == (budget, overhead)
    assert graphmem.analyze(CNN, dims={"batch": n}).total_bytes + overhead <= budget
    assert graphmem.analyze(CNN, dims={"batch": n + 1}).total_bytes + overhead > budget
    assert doc["total_bytes"] + overhead + doc["headroom_bytes"] == budget
    assert doc["dominant"] == "activations" and doc["probes"]


def test_fit_on_device_table() -> None:
    code, out, _ = run("fit", "--by", "requested", CNN, "--device", "Tesla T4", "--solve", "batch",
                       "--overhead", "500MiB")
    assert code == 0
    assert "NVIDIA T4" in out and "largest batch that fits" in out and "monotone" in out


def test_fit_gate_exit_codes() -> None:
    total = graphmem.analyze(CNN, dims={"batch": 32}).total_bytes
    code, out, _ = run("fit", "--by", "requested", CNN, "--memory", str(total), "--dim", "batch=32", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["mode"] == "check" and doc["fits"] and doc["headroom_bytes"] == 0
    code, out, _ = run("fit", "--by", "requested", CNN, "--memory", str(total - 1), "--dim", "batch=32", "--json")
    assert code == 1
    doc = json.loads(out)
    assert not doc["fits"] and doc["headroom_bytes"] == -1
    code, out, _ = run("fit", CNN, "--memory", "1KiB")  # nothing fits: a failed gate too
    assert code == 1 and "NOTHING FITS" in out


@pytest.mark.parametrize("args, needle", [
    ([], "needs a budget"),
    (["--device", "a100"], "did you mean a100-40gb, a100-80gb"),
    (["--device", "host"], "give --memory"),
    (["--memory", "lots"], "not a byte size"),
    (["--memory", "1GiB", "--dim", "bach=2"], "its dims: batch"),
    (["--memory", "1GiB", "--solve", "bach"], "its dims: batch"),
    (["--memory", "1GiB", "--dim", "batch=2", "--solve", "batch"], "also bound"),
    (["--memory", "1GiB", "--dim", "batch=1,2"], "one value"),
    (["--memory", "1MiB", "--overhead", "2MiB"], "leaves nothing"),
    (["--device-spec", "memory=1GiB,colour=red"], "unknown key"),
])
def test_fit_bad_input(args: list[str], needle: str) -> None:
    code, _, err = run("fit", CNN, *args)
    assert code == 2 and needle in err, err


def test_fit_several_unbound_dims() -> None:
    code, _, err = run("fit", BERT, "--memory", "1GiB")
    assert code == 2 and "batch, seq" in err and "--solve" in err


def test_fit_host_and_device_spec() -> None:
    code, out, _ = run("fit", CNN, "--device", "host", "--memory", "64MiB", "--json")
    assert code == 0 and json.loads(out)["device"]["name"] == "host"
    code, out, _ = run("fit", CNN, "--device-spec", "name=lab,memory=64MiB,fp32=1T", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["device"]["name"] == "lab" and doc["budget_bytes"] == 64 << 20


def test_fit_longest_context(decoder: str) -> None:
    code, out, _ = run("fit", "--by", "requested", decoder, "--memory", "4MiB", "--dim", "batch=4", "--solve", "seq",
                       "--json")
    assert code == 0
    doc = json.loads(out)
    n = doc["largest"]
    assert graphmem.analyze(decoder, dims={"batch": 4, "seq": n}).total_bytes <= 4 << 20
    assert graphmem.analyze(decoder, dims={"batch": 4, "seq": n + 1}).total_bytes > 4 << 20
    kv = doc["kv_cache"]
    assert kv["context_dim"] == "seq"
    assert kv["total_bytes"] == kv["past_bytes"] + kv["present_bytes"]
    code, out, _ = run("fit", "--by", "requested", decoder, "--memory", "4MiB", "--dim", "batch=4", "--solve", "seq")
    assert code == 0 and "kv cache" in out


def test_devices_command(tmp_path: Path) -> None:
    code, out, _ = run("devices", "--json")
    assert code == 0
    rows = json.loads(out)["devices"]
    assert all(r["source"] for r in rows) and {"k80", "t4", "host"} <= {r["name"] for r in rows}
    code, out, _ = run("devices")
    assert code == 0 and "jetson-agx-orin-64gb" in out
    f = tmp_path / "d.toml"
    f.write_text('[devices.lab]\nmemory = "8GiB"\nfp32 = "1T"\n')
    code, out, _ = run("devices", "--devices-file", str(f), "--json")
    assert code == 0 and json.loads(out)["devices"][-1]["name"] == "lab"
    code, _, err = run("devices", "--device-spec", "memory")
    assert code == 2 and "KEY=VALUE" in err


# --- fit --train ------------------------------------------------------------------------------

def _step(n: int, **config: object):  # type: ignore[no-untyped-def]
    from graphmem.training import estimate_training

    return estimate_training(TRAIN_CNN, dims={"batch": n}, **config)  # type: ignore[arg-type]


def test_fit_train_solves_exactly() -> None:
    budget, overhead = 2 << 20, 100 << 10
    code, out, _ = run("fit", TRAIN_CNN, "--train", "--memory", "2MiB", "--overhead", "100KiB",
                       "--json")
    assert code == 0
    doc = json.loads(out)
    n = doc["largest"]
    at, after = _step(n), _step(n + 1)
    assert at.step_peak_bytes + overhead <= budget < after.step_peak_bytes + overhead
    assert doc["mode"] == "solve" and doc["measure"] == "training_step_peak" and doc["monotone"]
    assert doc["total_bytes"] == at.step_peak_bytes
    assert doc["total_bytes"] + overhead + doc["headroom_bytes"] == budget
    assert doc["dominant"] == at.peak_phase == doc["training"]["peak_phase"]
    assert doc["breakdown"] == {p.phase: p.total_bytes for p in at.phases}
    t = doc["training"]
    assert {k: t[k] for k in ("optimizer", "grads", "precision", "frozen", "foreach")} == {
        "optimizer": "adam", "grads": "released", "precision": "fp32", "frozen": [],
        "foreach": False}
    assert t["step_peak_bytes"] == at.step_peak_bytes
    assert t["next_step_peak_bytes"] == after.step_peak_bytes
    assert t["inference_total_bytes"] == at.analysis.total_bytes
    for p in doc["probes"]:  # the per-probe step peaks are estimate_training's
        e = _step(p["value"])
        assert p["step_peak_bytes"] == p["total_bytes"] == e.step_peak_bytes
        assert p["peak_phase"] == e.peak_phase
        assert p["analysis_total_bytes"] == e.analysis.total_bytes
        assert p["fits"] == (e.step_peak_bytes + overhead <= budget)
    code, out, _ = run("fit", "--by", "requested", TRAIN_CNN, "--memory", "2MiB", "--overhead", "100KiB", "--json")
    assert code == 0 and json.loads(out)["largest"] > n and json.loads(out)["measure"] == "total"


def test_fit_train_options_pass_through() -> None:
    config = {"optimizer": "sgd", "grads": "persistent", "precision": "mixed-fp16",
              "frozen": ("0.*",), "foreach": True}
    code, out, _ = run("fit", TRAIN_CNN, "--train", "--memory", "3MiB", "--optimizer", "sgd",
                       "--grads", "persistent", "--precision", "mixed-fp16", "--frozen", "0.*",
                       "--foreach", "--json")
    assert code == 0
    doc = json.loads(out)
    n = doc["largest"]
    assert _step(n, **config).step_peak_bytes <= 3 << 20 < _step(n + 1, **config).step_peak_bytes
    t = doc["training"]
    assert (t["optimizer"], t["grads"], t["precision"], t["frozen"], t["foreach"]) == (
        "sgd", "persistent", "mixed-fp16", ["0.*"], True)
    assert t["optimizer_state_bytes"] == 8 and t["master_weights_bytes"] == 0  # GradScaler's two


def test_fit_train_gate_exit_codes() -> None:
    peak = _step(8).step_peak_bytes
    code, out, _ = run("fit", TRAIN_CNN, "--train", "--memory", str(peak + 1000), "--overhead",
                       "1000", "--dim", "batch=8", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["mode"] == "check" and doc["fits"] and doc["headroom_bytes"] == 0
    assert doc["total_bytes"] == peak and doc["needed_bytes"] == peak + 1000
    assert doc["training"]["step_peak_bytes"] == peak and doc["dominant"] == "backward"
    code, out, _ = run("fit", TRAIN_CNN, "--train", "--memory", str(peak - 1), "--dim", "batch=8")
    assert code == 1 and "DOES NOT FIT" in out and "short by 1 B" in out
    assert "one training step peaks at" in out and "step peaks in backward" in out
    code, out, _ = run("fit", TRAIN_CNN, "--train", "--memory", "100KiB")  # not even batch 1
    assert code == 1 and "NOTHING FITS" in out
    code, out, _ = run("fit", TRAIN_CNN, "--train", "--memory", "16MiB")
    assert code == 0 and "largest batch that fits for training" in out and "backward" in out


@pytest.mark.parametrize("args, needle", [
    (["--optimizer", "sgd"], "--optimizer needs --train"),
    (["--grads", "persistent", "--foreach"], "--grads, --foreach need --train"),
    (["--train", "--as-dtype", "float16"], "use --precision"),
    (["--train", "--optimizer", "lamb"], "choose one of sgd, momentum, adam, adamw"),
    (["--train", "--grads", "kept"], "released, persistent"),
    (["--train", "--precision", "fp8"], "mixed-bf16"),
    (["--train", "--frozen", "*"], "nothing to train"),
    (["--train", "--solve", "bach"], "its dims: batch"),
])
def test_fit_train_bad_input(args: list[str], needle: str) -> None:
    code, _, err = run("fit", TRAIN_CNN, "--memory", "1GiB", *args)
    assert code == 2 and needle in err, err


def test_fit_train_warnings() -> None:
    code, out, err = run("fit", TRAIN_CNN, "--train", "--memory", "8MiB", "--frozen", "nope*",
                         "--json")
    assert code == 0 and "--frozen 'nope*' matched no parameter" in err
    assert json.loads(out)["training"]["warnings"] == ["--frozen 'nope*' matched no parameter"]
