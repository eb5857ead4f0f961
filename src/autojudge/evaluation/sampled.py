"""The comparison's chosen points under sampled decoding: accuracy, MAT and the distribution shift.

For each split and seed, every problem is decoded at ``sampled.temperature`` (and top-p) with exact
speculative sampling and with each method's point chosen greedily on validation by stage compare
(every budget's, once each). The same seed is used by every method on a problem (common random
numbers, so the pairs are tight). Per problem, accuracy, tokens and target passes are pooled over seeds;
intervals are paired bootstraps over problems (``evaluation.stats``). Decoding runs on
``decoding.engine``: the reference engine, or vLLM with the plugin (the path users serve), and accuracy
and MAT come from that engine (``engine`` in the output).

The shift: the exact runs are the lossless trajectories; at each position verification decided, each
method's rule is only observed, and the total variation between the lossy and the lossless next-token
distribution there is summed (``decoding.sampling``). A method's shift is that sum over its problems'
generated tokens: the mean per-token total variation from lossless sampling, with an interval. Only the
reference engine can observe a rule without applying it, so the shift is always measured there.

This module decodes nothing (the card reads its figures and tables without the model stack);
:func:`autojudge.evaluation.sampled_decode.decode_sampled` decodes a split.
"""

from __future__ import annotations

import numpy as np

from autojudge.evaluation.setting import ALONE, Setting
from autojudge.evaluation.stats import mean_difference, paired_bootstrap, rate_of_first, rate_ratio

EXACT = "exact"
ENGINES = {"reference": "the reference engine", "vllm": "vLLM with the plugin"}


def settings_chosen_in(comparison: dict) -> list[Setting]:
    """Every method's point chosen on validation (any budget), in the comparison's order, once each."""
    by_name = {row["setting"]: row for row in comparison["validation"]}
    fields = set(Setting.__dataclass_fields__)
    settings: dict[str, Setting] = {}
    for chosen in comparison["chosen"].values():
        for method, name in chosen.items():
            if name is None or method == EXACT or name in settings or by_name[name]["method"] in ALONE:
                continue
            settings[name] = Setting(**{key: value for key, value in by_name[name].items() if key in fields})
    return list(settings.values())


def _interval(values_a, values_b, statistic, samples: int, seed: int) -> dict:
    value, low, high = paired_bootstrap(values_a, values_b, statistic, samples, seed)
    return {"value": value, "low": low, "high": high}


def method_figures(
    per_problem: dict, shift: np.ndarray | None, names: list[str], seeds: int, compare
) -> dict:
    """Per method of ``names`` (exact first): accuracy and MAT pooled over seeds, intervals against exact
    speculative sampling, the shift, and the per-problem values (``per_problem``: name -> [N, 3] solved,
    tokens and target passes summed over seeds; ``shift``: [N, methods after exact] summed total variation,
    None where the reference engine cannot decode the pair: an EAGLE head)."""
    samples, seed = compare.bootstrap_samples, compare.seed
    exact = per_problem[EXACT]
    tokens = exact[:, 1]
    methods = {}
    for column, name in enumerate(names):
        values = per_problem[name]
        row = {
            "accuracy": float(values[:, 0].sum() / (seeds * len(values))),
            "mat": float(values[:, 1].sum() / values[:, 2].sum()),
            "per_problem": {"solved": values[:, 0].tolist(), "tokens": values[:, 1].tolist(),
                            "target_passes": values[:, 2].tolist()},
        }  # fmt: skip
        if name != EXACT:
            row["accuracy_drop"] = _interval(
                exact[:, 0] / seeds, values[:, 0] / seeds, mean_difference, samples, seed
            )
            row["mat_gain_vs_exact_sd"] = _interval(values[:, 1:], exact[:, 1:], rate_ratio, samples, seed)
            row["shift_tv_per_token"] = None
            if shift is not None:
                tv = np.stack([shift[:, column - 1], tokens], axis=1)
                row["shift_tv_per_token"] = _interval(tv, tv, rate_of_first, samples, seed)
                row["per_problem"]["shift_tv_sum"] = shift[:, column - 1].tolist()
        methods[name] = row
    return {"seeds": seeds, "methods": methods}


def _shift(row: dict) -> str:
    """A method's shift, or ``-`` where none was measured (an EAGLE head: no reference engine)."""
    return "-" if row["shift_tv_per_token"] is None else _entry(row["shift_tv_per_token"])


def _entry(entry: dict, scale: float = 1.0) -> str:
    """A signed difference (scaled: points) or, at scale 1, a non-negative mean, with its interval."""
    style = "+.1f" if scale > 1 else ".3f"
    value, low, high = (scale * entry[key] for key in ("value", "low", "high"))
    return f"{value:{style}} [{low:{style}}, {high:{style}}]"


def sampled_markdown(result: dict) -> str:
    """Per split, each method's sampled accuracy, drop and MAT gain against exact speculative sampling,
    and its shift from lossless sampling."""
    lines = [
        f"## Sampled decoding: temperature {result['temperature']}, top-p {result['top_p']}, "
        f"seeds {result['seeds']}",
        "",
        "Each method's point chosen greedily on validation (stage compare), decoded with speculative sampling; "
        "drops and MAT ratios against exact speculative sampling (lossless: distributed as the target's own "
        "sampling) with the same seeds; shift: mean per-token total variation from lossless sampling along "
        "the lossless trajectories. 95% paired-bootstrap intervals over problems (seeds pooled per problem).",
    ]
    for split, figures in result["splits"].items():
        exact = figures["methods"][EXACT]
        engine = ENGINES[figures.get("engine", "reference")]
        lines += [
            "",
            f"### {split} ({figures['problems']} problems, decoded on {engine}): exact speculative sampling "
            f"{100 * exact['accuracy']:.1f}%, MAT {exact['mat']:.2f}",
            "",
            "| setting | accuracy, % | drop, points [95% CI] | MAT | MAT vs exact [95% CI] "
            "| TV per token, reference engine [95% CI] |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, row in figures["methods"].items():
            if name == EXACT:
                continue
            lines.append(
                f"| {name} | {100 * row['accuracy']:.1f} | {_entry(row['accuracy_drop'], 100)} | {row['mat']:.2f} | "
                f"{_ratio(row['mat_gain_vs_exact_sd'])} | {_shift(row)} |"
            )
    return "\n".join(lines)


def sampled_section(result: dict) -> dict:
    """Stage sampled's figures for the card: intervals and means, without the per-problem values."""
    splits = {
        split: {
            **figures,
            "methods": {
                name: {key: value for key, value in row.items() if key != "per_problem"}
                for name, row in figures["methods"].items()
            },
        }
        for split, figures in result["splits"].items()
    }
    return {**result, "splits": splits}


def _greedy_rows(comparison: dict | None, split: str) -> dict[str, dict]:
    table = ((comparison or {}).get("splits", {}).get(split) or {}).get("table", {})
    return {row["setting"]: row for by_budget in table.values() for row in by_budget.values() if row}


def greedy_and_sampled_markdown(section: dict, comparison: dict | None) -> list[str]:
    """The card's table: each chosen point's greedy figures (stage compare, against target greedy and exact
    SD) beside its sampled ones (against exact speculative sampling), on the last split of both."""
    split = list(section["splits"])[-1]
    figures = section["splits"][split]
    greedy = _greedy_rows(comparison, split)
    lines = [
        f"## Greedy and sampled decoding ({split} split; sampled: T={section['temperature']}, "
        f"top-p {section['top_p']}, seeds {section['seeds']})",
        "",
        "| setting | greedy: drop vs target, points | greedy: MAT vs exact SD | sampled: drop vs exact, points "
        "| sampled: MAT vs exact | sampled: TV per token |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in figures["methods"].items():
        if name == EXACT:
            continue
        before = greedy.get(name)
        greedy_cells = (
            [_entry(before["accuracy_drop"], 100), _ratio(before["mat_gain_vs_exact_sd"])]
            if before
            else ["-", "-"]
        )
        sampled_cells = [
            _entry(row["accuracy_drop"], 100),
            _ratio(row["mat_gain_vs_exact_sd"]),
            _shift(row),
        ]
        lines.append(f"| {name} | " + " | ".join(greedy_cells + sampled_cells) + " |")
    return lines


def _ratio(entry: dict) -> str:
    return f"{entry['value']:.2f}x [{entry['low']:.2f}, {entry['high']:.2f}]"
