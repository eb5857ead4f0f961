"""``autojudge ceiling`` on the toy pair: Algorithm 1 on a few problems, then the important share and the
ceiling at each window, figures consistent with each other and with the replay of the problems it kept."""

import re

import pytest
from helpers import set_params

from autojudge.evaluation.ceiling import WINDOWS, ceiling_summary
from autojudge.mining.shards import load_shard

NUMBER = r"(\d+\.\d+)"
INTERVAL = rf"{NUMBER} \[{NUMBER}, {NUMBER}\]"
ROW = re.compile(rf"^\s*(\d+)\s+{INTERVAL}\s+{INTERVAL}\s+{NUMBER}x \[{NUMBER}, {NUMBER}\]$")
IMPORTANT = re.compile(rf"^important mismatches: (\d+) of (\d+) = {NUMBER}% \[{NUMBER}, {NUMBER}\]")


@pytest.fixture
def hf_params(eval_params):
    """The toy params on the session's arith splits, mining on the transformers engine (no vLLM start)."""
    set_params(eval_params, {"mining.engine": "hf"})
    return eval_params


def test_ceiling_prints_the_important_share_and_the_ceiling_at_each_window(autojudge, hf_params, tmp_path):
    out = tmp_path / "mined"
    result = autojudge(
        "ceiling", "--problems", "6", "--out", str(out), "--params", str(hf_params), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("toy-mixed on arith (train): "))
    assert lines[first].startswith("toy-mixed on arith (train): 6 problems mined in ")
    important, mismatches, percent, low, high = IMPORTANT.match(lines[first + 1]).groups()
    assert 0 <= int(important) <= int(mismatches) > 0
    assert float(low) <= float(percent) <= float(high)
    assert float(percent) == pytest.approx(100 * int(important) / int(mismatches), abs=0.05)
    rows = [[float(x) for x in ROW.match(line).groups()] for line in lines[first + 3 : first + 8]]
    assert [int(row[0]) for row in rows] == list(WINDOWS)
    for window, *figures in rows:
        exact, ceiling, ratio = figures[0:3], figures[3:6], figures[6:9]
        for value, low, high in (exact, ceiling, ratio):
            assert low <= value <= high
        assert 1 <= exact[0] <= ceiling[0] <= window + 1
        assert ratio[0] == pytest.approx(ceiling[0] / exact[0], abs=0.02)
    # the printed figures are the replay of the problems it mined (kept in --out)
    summary = ceiling_summary(load_shard(out))
    assert summary["problems"] == 6 and (summary["important"], summary["mismatches"]) == (
        int(important),
        int(mismatches),
    )
    assert [round(w["ratio"]["value"], 2) for w in summary["windows"].values()] == [row[7] for row in rows]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("--problems", "0"), "error: --problems 0: need at least 1"),
        (("--window", "0"), "error: draft windows [0] out of range: need 1 <= W <= 192"),
        (("--window", "8", "--window", "500"), "error: draft windows [500] out of range: need 1 <= W <= 192"),
        (("--task", "gsm8k"), "error: task 'gsm8k' is not a pipeline task; tasks: ['arith', 'pyfunc']"),
    ],
)
def test_bad_input_stops_with_one_line(autojudge, eval_params, tmp_path, arguments, message):
    result = autojudge("ceiling", *arguments, "--params", str(eval_params), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == message


def test_missing_params_stop_with_one_line(autojudge, tmp_path):
    result = autojudge("ceiling", "--params", "missing.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "missing.yaml" in result.stderr
