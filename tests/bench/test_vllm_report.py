"""The vLLM benchmark's tables and its section of the head's card."""

from __future__ import annotations

import json

import torch

from autojudge.bench.vllm_plan import header
from autojudge.bench.vllm_report import speed_table
from autojudge.params import BenchParams


def test_speed_table_has_one_row_per_setting_with_batch_sizes_and_runner(fake_report) -> None:
    report = {**header(BenchParams(batch_sizes=[1, 8]), 4, 4), **fake_report()}
    rows = speed_table(report)
    assert [r["setting"] for r in rows] == [
        "target alone",
        "SD stock (vLLM)",
        "SD exact (plugin)",
        "AutoJudge",
    ]
    head = rows[3]
    assert head["threshold"] == 0.5 and head["window (bs 1/8)"] == "1/1"
    assert head["speedup over stock SD, bs 1 [95% CI]"] == "1.250 [1.250, 1.250]"
    ratio_over_exact = report["settings"]["autojudge_t0.5"]["speedup_vs_exact_bs1"]
    assert head["over plugin exact SD, bs 1 [95% CI]"] == (
        f"{ratio_over_exact['point']:.3f} [{ratio_over_exact['low']:.3f}, {ratio_over_exact['high']:.3f}]"
    )
    assert rows[2]["over plugin exact SD, bs 1 [95% CI]"] == "1.000 [1.000, 1.000]"
    assert rows[0]["over plugin exact SD, bs 1 [95% CI]"] == "-"  # the target alone has no exact SD
    assert head["accuracy, % [95% CI]"].startswith("75.0 [") and head[
        "drop vs target, points [95% CI]"
    ].startswith("+25.0")
    assert {"tokens/s bs 1", "s/problem bs 1", "tokens/s bs 8", "s/problem bs 8"} <= set(head)
    assert rows[1]["runner"] == "V1, CPUWorker, plugin not loaded"


def test_card_shows_speed_and_energy_tables_even_without_gpu(params, fake_report) -> None:
    from autojudge.features.spec import FeatureSpec
    from autojudge.heads.artifact import JudgeHead
    from autojudge.registry.card import build_card, card_markdown

    bench = json.loads(
        json.dumps({**header(params.bench, 4, 4), **fake_report(min_ratio=1.3)})
    )  # as register reads it
    head = JudgeHead(torch.zeros(4), 0.0, 0.5, FeatureSpec("target", 4, 2), "toy", "arith", "hash")
    row = {"setting": "exact W=8", "method": "exact", "accuracy": 1.0, "mat": 2.0, "accepted_mismatches": 0}
    evaluation = {
        "split": "test",
        "settings": [row],
        "headline": {
            "judge_mat": 2.0,
            "exact_sd_mat": 2.0,
            "mat_gain_vs_exact_sd": 1.0,
            "judge_accuracy": 1.0,
            "target_accuracy": 1.0,
            "accuracy_drop_vs_target": 0.0,
        },
    }
    card = build_card(params, head, {}, evaluation, "autojudge-arith-toy", bench=bench)
    text = card_markdown(card)
    assert card["vllm_bench"]["speed"][1]["setting"] == "SD stock (vLLM)"
    assert "## Speed and energy with vLLM" in text and "| AutoJudge | 0.5 | 1/1 |" in text
    assert (
        "**1.25 [1.25, 1.25]x (faster) tokens/s**" in text
        and "Fastest at batch size 1: **AutoJudge at threshold 0.5**" in text
    )
    energy = card["vllm_bench"]["energy"][0]
    assert (
        energy["joules"] == "not available" and energy["GPU or reason"] == "none"
    )  # the reason, in the table
    assert "### Why the ratio is below 1.3" in text  # 1.25x: explained from step times
