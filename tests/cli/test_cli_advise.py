"""``graphmem advise`` through typer's runner: exit codes, the table's lines, the JSON document's
exact bytes on the committed tiny CNN (the arithmetic is in tests/batch/test_advise.py)."""

from __future__ import annotations

import json

from builders import CNN, outcome
from graphmem.schema import validate

ARGS = ("advise", str(CNN), "--dim", "batch=2", "--session-option", "intra_op_num_threads=1")


def test_advise_json_has_exact_bytes_and_matches_its_schema() -> None:
    code, out, err = outcome(*ARGS, "--json")
    assert code == 0, err
    doc = json.loads(out)
    validate(doc, "advise")
    assert doc["session_options"] == ["intra_op_num_threads=1"]
    assert doc["current"]["session"]["arena_steady_bytes"] == 3_147_880  # 2,152 + 1 MiB + 2 MiB
    lines = {x["change"]: x for x in doc["advice"]}
    no_pattern = lines["enable_mem_pattern=0"]
    assert (no_pattern["arena_steady_bytes"], no_pattern["arena_saving_bytes"]) == (1_050_728, 2_097_152)
    assert no_pattern["verify_command"].endswith("--session-option enable_mem_pattern=0 --session-option intra_op_num_threads=1")
    assert lines["enable_cpu_mem_arena=0"]["arena_saving_bytes"] is None
    assert [x["rank"] for x in doc["advice"]] == list(range(1, len(doc["advice"]) + 1))
    savings = [x["resident_saving_bytes"] for x in doc["advice"]]
    assert savings == sorted(savings, reverse=True)
    for x in doc["advice"]:
        assert x["resident_saving_bytes"] == doc["current"]["session"]["resident_bytes"] - x["resident_bytes"]


def test_advise_table_names_each_setting_its_speed_and_command() -> None:
    code, out, err = outcome(*ARGS)
    assert code == 0, err
    assert out.startswith(f"graphmem advise: {CNN} (batch=2), CPU session, graph-opt none")
    assert "held now: arena steady 3.00 MiB (3,147,880 B)" in out
    row = next(line for line in out.splitlines() if line.strip().split()[1:2] == ["enable_mem_pattern=0"])
    assert row.split()[2:5] == ["1.00", "MiB", "-2.00"]
    assert "speed: from run 2 on, one arena allocation per tensor per run" in out
    assert (f"measure: graphmem verify {CNN} --dim batch=2 --graph-opt none --session-option enable_mem_pattern=0 "
            "--session-option intra_op_num_threads=1") in out


def test_advise_bad_option_is_one_line_and_exit_2() -> None:
    code, out, err = outcome("advise", str(CNN), "--dim", "batch=1", "--session-option", "execution_mode=1")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == ["graphmem: error: --session-option execution_mode: not emulated "
                                        "(the parallel executor disables the memory pattern and reorders nodes)"]
    code, _, err = outcome("advise", str(CNN), "--dim", "batch=1", "--graph-opt", "max")
    assert code == 2 and "--graph-opt 'max'" in err


def test_the_report_shows_the_arena_regions_and_the_advice_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "cnn.html"
    code, _, err = outcome("report", str(CNN), "--dim", "batch=2", "--session-option", "intra_op_num_threads=1", "-o", str(out))
    assert code == 0, err
    page = out.read_text()
    # the regions of tests/views/test_arena_picture.py: 1 MiB in run 1, 2 MiB from run 2, on 2,152 B reserved
    assert 'data-bytes="1048576" data-run="1" data-step="0"' in page
    assert 'data-bytes="2097152" data-run="2"' in page and 'class="reserved"' in page
    assert "<h2>Session settings that change what it holds</h2>" in page
    assert "<code>enable_mem_pattern=0</code>" in page
    assert (f"graphmem verify {CNN} --dim batch=2 --graph-opt none --session-option enable_mem_pattern=0 "
            "--session-option intra_op_num_threads=1") in page
