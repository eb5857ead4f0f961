"""The vLLM benchmark's tables and its section of the head's card."""

from __future__ import annotations

import json

import torch
from fake_comparison import fake_evaluation

from autojudge.bench.vllm_plan import header
from autojudge.bench.vllm_report import report_markdown
from autojudge.bench.vllm_tables import speed_table
from autojudge.params import BenchParams


def test_speed_table_has_one_row_per_setting_with_batch_sizes_and_runner(fake_report) -> None:
    report = {**header(BenchParams(batch_sizes=[1, 8]), 4, 4), **fake_report()}
    rows = speed_table(report)
    assert [r["setting"] for r in rows] == [
        "target alone",
        "SD stock (vLLM)",
        "control: SD exact (plugin)",
        "AutoJudge",
    ]
    head = rows[3]
    assert head["threshold"] == 0.5 and head["window (bs 1/8)"] == "1/1"
    assert head["(c) over stock SD, bs 1 [95% CI]"] == "1.250 [1.250, 1.250]"
    ratio_over_exact = report["settings"]["autojudge_t0.5"]["speedup_vs_exact_bs1"]
    assert head["(b) over the control, bs 1 [95% CI]"] == (
        f"{ratio_over_exact['point']:.3f} [{ratio_over_exact['low']:.3f}, {ratio_over_exact['high']:.3f}]"
    )
    assert rows[2]["(b) over the control, bs 1 [95% CI]"] == "1.000 [1.000, 1.000]"
    assert rows[0]["(b) over the control, bs 1 [95% CI]"] == "-"  # the target alone has no control
    # accuracy from the comparison's decode of the same setting (8 problems), not the benchmark's 4
    assert head["accuracy, % [95% CI] (comparison)"].startswith("87.5 [")
    assert head["drop vs target, points [95% CI]"].startswith("+12.5")
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
    card = build_card(params, head, {}, fake_evaluation(), "autojudge-arith-toy", bench=bench)
    text = card_markdown(card)
    assert card["vllm_bench"]["speed"][1]["setting"] == "SD stock (vLLM)"
    assert "## Speed and energy with vLLM" in text and "| AutoJudge | 0.5 | 1/1 |" in text
    assert "(c) 1.25 [1.25, 1.25]x (faster) stock SD's" in text
    assert "Fastest at batch size 1: **AutoJudge at threshold 0.5**" in text
    assert "(a) **1.00 [1.00, 1.00]x (not distinguishable) stock SD's tokens/s**" in text
    assert "Its interval contains 1.00" in text
    energy = card["vllm_bench"]["energy"][0]
    assert (
        energy["joules"] == "not available" and energy["GPU or reason"] == "none"
    )  # the reason, in the table
    assert "### Why the ratio is below 1.3" in text  # 1.25x: explained from step times


def test_the_report_names_a_biased_control_and_records_rounds_load_and_threads(fake_report) -> None:
    report = {**header(BenchParams(windows=[1, 8], batch_sizes=[1, 8]), 4, 4), **fake_report()}
    report |= {"pair": "toy", "task": "arith"}
    report["control"] = {**report["control"], "biased": True}
    report["control"]["vs_stock_bs1"] = {"point": 1.06, "low": 1.02, "high": 1.1, "verdict": "faster"}
    text = report_markdown(report)
    assert "(a) **1.06 [1.02, 1.10]x (faster) stock SD's tokens/s**" in text
    assert "**that is this benchmark's bias**" in text
    assert "1-minute load at each timed round's start and end: 1.0->1.5, 1.0->1.5, on 2 usable CPUs" in text
    assert "OMP_WAIT_POLICY=PASSIVE, VLLM_CPU_OMP_THREADS_BIND=0,1" in text
    assert report["round_order"]["seed"] == 0 and [r["phase"] for r in report["rounds"]] == [
        "tuning",
        "timed",
        "timed",
    ]
    # the fakes' judge at threshold 0 took longer steps than the control: the head's cost, no bias named
    assert "The head's cost: **+5.0 [+5.0, +5.0]%** of step time" in text
