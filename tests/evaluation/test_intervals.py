"""Every interval of compare.json and crossdomain.json recomputed from the file alone: the stages run on
a fake decoder (no model), their output is written and read back, and each stored interval comes back
exactly from the stored per-problem figures."""

import json

import pytest
from fake_comparison import fake_ceiling, fake_run_settings, fake_scores, toy_head

import autojudge.evaluation.comparison_decode as comparison_decode
import autojudge.evaluation.crossdomain_decode as crossdomain_decode
from autojudge.errors import InputError
from autojudge.evaluation.intervals import load_stored, recompute
from autojudge.io import write_json


@pytest.fixture
def compare_file(params, tmp_path, monkeypatch):
    """compare.json as the stage writes it, from the fake decoder."""
    monkeypatch.setattr(comparison_decode, "run_settings", fake_run_settings)
    monkeypatch.setattr(comparison_decode, "method_scores", fake_scores)
    fake_ceiling(monkeypatch, comparison_decode)
    compare = params.compare.model_copy(update={"bootstrap_samples": 200, "seed": 3, "splits": ["test"]})
    result, _ = comparison_decode.compare_methods(
        params.model_copy(update={"compare": compare}), toy_head().save(tmp_path / "head.safetensors"), None
    )
    write_json(tmp_path / "compare.json", result)
    return tmp_path / "compare.json"


def _stored_intervals(result: dict):
    """(split, a, b, statistic, stored interval) of every interval in a compare.json."""
    for split, figures in result["splits"].items():
        exact = next(s["setting"] for s in figures["settings"] if s["method"] == "exact")
        for by_budget in figures["table"].values():
            for entry in filter(None, by_budget.values()):
                name = entry["setting"]
                yield split, "target alone", name, "accuracy-drop", entry["accuracy_drop"]
                yield split, name, exact, "mat-ratio", entry["mat_gain_vs_exact_sd"]
        for budget, verdict in result["decisions"][split].items():
            if verdict.get("ratio_vs_runner_up"):
                runner_up = figures["table"][verdict["runner_up"]][budget]["setting"]
                yield split, verdict["setting"], runner_up, "mat-ratio", verdict["ratio_vs_runner_up"]
            if verdict.get("head_vs_best_rule"):
                head = figures["table"]["judge"][budget]["setting"]
                rule = verdict["head_vs_best_rule"]
                yield (
                    split,
                    head,
                    rule["setting"],
                    "mat-ratio",
                    {k: rule[k] for k in ("value", "low", "high")},
                )


def test_every_interval_of_compare_json_comes_back_from_the_file_alone(compare_file):
    result = json.loads(compare_file.read_text())
    stored = load_stored(compare_file)
    assert (stored.samples, stored.seed) == (200, 3)
    assert set(result["problems"]) == {"validation", "test"}
    assert [row["setting"] for row in result["validation"]] == stored.settings("validation")
    assert set(stored.settings("test")) == {s["setting"] for s in result["splits"]["test"]["settings"]}
    assert set(result["problems"]["test"]["target alone"]) == {"id", "correct", "tokens", "target_passes"}
    intervals = list(_stored_intervals(result))
    statistics = {statistic for *_, statistic, _ in intervals}
    assert len(intervals) > 10 and statistics == {"accuracy-drop", "mat-ratio"}
    assert any(interval["low"] < interval["high"] for *_, interval in intervals)  # not only points
    for split, a, b, statistic, interval in intervals:
        assert recompute(stored, split, a, b, statistic) == interval, (split, a, b, statistic)


def test_every_interval_of_crossdomain_json_comes_back_from_the_file_alone(params, tmp_path, monkeypatch):
    monkeypatch.setattr(crossdomain_decode, "run_settings", fake_run_settings)
    settings = params.crossdomain.model_copy(update={"bootstrap_samples": 150, "seed": 7})
    heads = {
        task: toy_head(0.2 + i / 10).save(tmp_path / f"{task}.safetensors")
        for i, task in enumerate(params.tasks)
    }
    result = crossdomain_decode.cross_domain(params.model_copy(update={"crossdomain": settings}), heads)
    write_json(tmp_path / "crossdomain.json", result)
    stored = load_stored(tmp_path / "crossdomain.json")
    assert (stored.samples, stored.seed) == (150, 7) and stored.splits() == settings.domains
    exact = f"exact SD W={settings.window}"
    for task, rows in result["heads"].items():
        name = f"{task} head t={result['thresholds'][task]:.4g} W={settings.window}"
        for row in rows:
            assert (
                recompute(stored, row["domain"], "target alone", name, "accuracy-drop")
                == row["accuracy_drop"]
            )
            assert recompute(stored, row["domain"], name, exact, "mat-ratio") == row["mat_gain_vs_exact_sd"]


def test_bad_input_names_what_is_missing_and_what_is_known(compare_file, tmp_path):
    stored = load_stored(compare_file)
    with pytest.raises(
        InputError, match=r"no setting 'judge t=9 W=32' on split 'test'; known: .*target alone"
    ):
        recompute(stored, "test", "judge t=9 W=32", "target alone", "mat-ratio")
    with pytest.raises(InputError, match=r"no split 'shifted'; known: validation, test"):
        recompute(stored, "shifted", "target alone", "target alone", "mat-ratio")
    with pytest.raises(InputError, match=r"unknown statistic 'speed'; known: accuracy-drop, mat-ratio"):
        recompute(stored, "test", "target alone", "target alone", "speed")
    with pytest.raises(InputError, match="file not found"):
        load_stored(tmp_path / "nowhere.json")
    result = json.loads(compare_file.read_text())
    del result["problems"]
    write_json(tmp_path / "old.json", result)
    with pytest.raises(InputError, match=r"no per-problem figures \(key 'problems'\); rerun"):
        load_stored(tmp_path / "old.json")
