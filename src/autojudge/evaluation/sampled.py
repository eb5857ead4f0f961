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
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.decoding.generation import Generation
from autojudge.decoding.sampling import Sampling
from autojudge.evaluation.scoring import score
from autojudge.evaluation.setting import ALONE, Setting
from autojudge.evaluation.stats import mean_difference, paired_bootstrap, rate_of_first, rate_ratio
from autojudge.evaluation.vllm_sweep import Job, decode_on_vllm, job_of
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.models.pair import ModelPair
from autojudge.models.prompts import encode_prompt
from autojudge.params import Params
from autojudge.rules.acceptance import ExactMatch
from autojudge.rules.build import build_rule
from autojudge.rules.config import RuleConfig
from autojudge.tasks.base import Task

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


def decode_sampled(
    params: Params,
    pair: ModelPair,
    task: Task,
    settings: list[Setting],
    head_files: dict[str, Path],
    split: str,
) -> dict:
    """One split's figures on ``decoding.engine``: per method, accuracy and MAT (pooled over seeds) with
    intervals against exact speculative sampling, the shift from lossless sampling (always measured on the
    reference engine: vLLM cannot observe a rule it does not apply), and the per-problem values."""
    spec = params.sampled
    examples = task.load_split(split, spec.limit)
    prompts = [
        encode_prompt(pair.tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples
    ]
    names = [EXACT, *(setting.name for setting in settings)]
    heads = {method: load_head(path) for method, path in head_files.items()}
    on_vllm = params.decoding.engine == "vllm"
    if on_vllm:
        decoded = _decode_on_vllm(params, pair, settings, prompts, head_files)
        shifts = _decode_reference(params, pair, settings, prompts, heads, exact_only=True)[EXACT]
    else:
        decoded = _decode_reference(params, pair, settings, prompts, heads, exact_only=False)
        shifts = decoded[EXACT]
    n = len(examples)
    per_problem = {name: np.zeros((n, 3)) for name in names}  # correct, tokens, target passes
    for name in names:
        for generations in decoded[name]:  # one list per seed
            _, results = score(task, examples, generations, pair.tokenizer, name)
            per_problem[name] += [[r.correct, r.tokens, r.target_passes] for r in results]
    shift = np.zeros((n, len(settings)))
    for generations in shifts:
        shift += [g.stats.shifts or [0.0] * len(settings) for g in generations]
    figures = _figures(per_problem, shift, names, len(spec.seeds), params.compare)
    return {"problems": n, "engine": "vllm" if on_vllm else "reference", **figures}


def _decode_reference(
    params: Params,
    pair: ModelPair,
    settings: list[Setting],
    prompts: list[list[int]],
    heads: dict[str, JudgeHead],
    exact_only: bool,
) -> dict[str, list[list[Generation]]]:
    """Per method (exact only: exact speculative sampling observing every rule), per seed, the reference
    engine's generations."""
    spec, window = params.sampled, params.compare.window
    rules = {
        s.name: build_rule(s.rule_config(params.compare), window, heads.get(s.head_key)) for s in settings
    }
    names = [EXACT] if exact_only else [EXACT, *rules]
    requests = []
    for seed in spec.seeds:
        sampling = Sampling(spec.temperature, spec.top_p, seed)
        for name in names:
            rule = ExactMatch() if name == EXACT else rules[name]
            observed = tuple(rules.values()) if name == EXACT else ()
            requests += [Request(prompt, rule, sampling, observed) for prompt in prompts]
    decoder = BatchedDecoder(
        pair.target, pair.draft, pair.vocab_size, pair.eos_token_ids, window,
        params.decoding.max_new_tokens, params.decoding.batch_size,
    )  # fmt: skip
    generations = decoder.generate(requests, f"sampled, T={spec.temperature}, reference engine")
    n = len(prompts)
    blocks = [generations[start : start + n] for start in range(0, len(generations), n)]
    return {name: blocks[column :: len(names)] for column, name in enumerate(names)}


def _decode_on_vllm(
    params: Params,
    pair: ModelPair,
    settings: list[Setting],
    prompts: list[list[int]],
    head_files: dict[str, Path],
) -> dict[str, list[list[Generation]]]:
    """Per method, per seed, vLLM's generations with the plugin (every seed's requests in one call)."""
    spec, compare = params.sampled, params.compare
    exact = Job("speculative", compare.window, RuleConfig("exact"))
    jobs = [exact, *(job_of(setting, compare) for setting in settings)]
    samplings = [Sampling(spec.temperature, spec.top_p, seed) for seed in spec.seeds for _ in prompts]
    per_job = decode_on_vllm(
        params, jobs, prompts * len(spec.seeds), pair.eos_token_ids, dict(head_files), samplings
    )
    n = len(prompts)
    names = [EXACT, *(setting.name for setting in settings)]
    return {
        name: [generations[start : start + n] for start in range(0, len(generations), n)]
        for name, generations in zip(names, per_job, strict=True)
    }


def _figures(per_problem: dict, shift: np.ndarray, names: list[str], seeds: int, compare) -> dict:
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
            tv = np.stack([shift[:, column - 1], tokens], axis=1)
            row["shift_tv_per_token"] = _interval(tv, tv, rate_of_first, samples, seed)
            row["per_problem"]["shift_tv_sum"] = shift[:, column - 1].tolist()
        methods[name] = row
    return {"seeds": seeds, "methods": methods}


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
                f"{_ratio(row['mat_gain_vs_exact_sd'])} | {_entry(row['shift_tv_per_token'])} |"
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
            _entry(row["shift_tv_per_token"]),
        ]
        lines.append(f"| {name} | " + " | ".join(greedy_cells + sampled_cells) + " |")
    return lines


def _ratio(entry: dict) -> str:
    return f"{entry['value']:.2f}x [{entry['low']:.2f}, {entry['high']:.2f}]"
