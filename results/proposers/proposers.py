"""The fine-tuned SmolLM2 target's proposers side by side (issue 37, items 1-2): distilled drafts (preset
smollm2-arith's, or the depths of ``--drafts``: ``depth_sweep.py``'s) and the EAGLE head of preset
smollm2-eagle, each with its teacher-forced agreement, exact speculative decoding's MAT at ``--window`` and
vLLM's tokens/s against the target alone at batch sizes 1 and 8; each distilled draft's accuracy alone on
``--alone-problems`` test problems too (an EAGLE head has none).

Every engine (target alone, SD with each draft, SD with the head; vLLM's own verification, no plugin) is
alive at once in this process and their passes alternate round by round, so the machine's drift between
passes hits every setting alike (``autojudge.bench.vllm_measure.measure``). Ratios at batch size 1 carry
95% paired bootstrap intervals over problems (each problem timed alone); at batch size 8 problems share
their time, so the ratio is of median tokens/s over the repeats, with every repeat's seconds kept.
Agreement: the share of the target's greedy response tokens the proposer's teacher-forced first guess
equals (``models.teacher_forced.DraftPredictor``, ``models.eagle_predictor.EaglePredictor``).

Run from the repository root with preset smollm2-eagle applied and its models built
(``autojudge preset smollm2-arith && dvc repro distill@smollm2-arith``, then ``autojudge preset
smollm2-eagle && dvc repro eagle@smollm2-arith``), nothing else on the cores::

    python results/proposers/proposers.py --problems 24
    python results/proposers/proposers.py --problems 12 --repeats 2 --alone-problems 200 --out \
        results/proposers/depths --drafts models/smollm2-arith/draft-4 models/smollm2-arith/draft-8 \
        models/smollm2-arith/draft-12

Writes ``proposers.json`` (per-problem figures kept) and ``proposers.md`` to ``--out`` (default
``results/proposers``).
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import torch
from preset import eagle_preset  # this folder's

from autojudge.bench.energy import PowerMeter
from autojudge.bench.machine import processor_name
from autojudge.bench.vllm_analysis import rate_comparison
from autojudge.bench.vllm_bench import engine_environment
from autojudge.bench.vllm_measure import measure, per_problem, summarize_runs
from autojudge.engines.vllm_engine import VllmEngine
from autojudge.evaluation.stats import mean_of_first, paired_bootstrap, rate_of_first
from autojudge.io import read_json, write_json, write_text
from autojudge.models.eagle import load_head
from autojudge.models.eagle_predictor import EaglePredictor
from autojudge.models.pair import load_causal_lm
from autojudge.models.prompts import encode_prompt
from autojudge.models.runtime import pair_from, task_from
from autojudge.models.teacher_forced import DraftPredictor
from autojudge.vllm_plugin.engine import decode, speculative_llm

OUT = Path("results/proposers")
TARGET, EAGLE_SD = "target alone", "SD, EAGLE head"
BATCH_SIZES = (1, 8)
STATS = SimpleNamespace(bootstrap_samples=2000, seed=0)


def draft_name(path: Path) -> str:
    """A distilled draft's setting name, by its folder and depth."""
    return f"SD, distilled draft {path.name} ({read_json(path / 'config.json')['num_hidden_layers']} layers)"


def _interval(rows: list, statistic) -> dict:
    point, low, high = paired_bootstrap(rows, rows, statistic, STATS.bootstrap_samples, STATS.seed)
    return {"point": round(point, 4), "low": round(low, 4), "high": round(high, 4)}


def agreement(guesses: list[list[int]], responses: list[list[int]]) -> dict:
    """Share of response tokens guessed, with its interval over problems."""
    rows = [
        [sum(g == t for g, t in zip(guess, response, strict=True)), len(response)]
        for guess, response in zip(guesses, responses, strict=True)
        if response
    ]
    return _interval(rows, rate_of_first)


def accuracy(task, examples, tokenizer, outputs: list[list[int]]) -> dict:
    texts = [tokenizer.decode(tokens, skip_special_tokens=True) for tokens in outputs]
    correct = [float(c) for c in task.scores(texts, examples)]
    return {**_interval(correct, mean_of_first), "correct": correct}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--problems", type=int, default=24, help="timed test problems")
    parser.add_argument(
        "--alone-problems", type=int, help="test problems each draft solves alone (default: --problems)"
    )
    parser.add_argument("--drafts", type=Path, nargs="+", help="distilled drafts (default: smollm2-arith's)")
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT, help="folder of proposers.json and proposers.md")
    args = parser.parse_args()
    params, eagle = eagle_preset(args.params)
    vllm, pair, task = params.mining.vllm, pair_from(params), task_from(params)
    drafts = {draft_name(path): path for path in args.drafts or [params.pair.draft]}
    examples = task.load_split("test", max(args.problems, args.alone_problems or 0))
    prompts = [
        encode_prompt(pair.tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples
    ]
    timed, alone_count = prompts[: args.problems], args.alone_problems or args.problems
    max_new, eos, load_before = params.decoding.max_new_tokens, pair.eos_token_ids, os.getloadavg()[0]

    def spec(method: str, proposer: Path):
        return speculative_llm(
            params.pair.target, proposer, args.window, None, vllm.engine_kwargs, params.pair.dtype,
            vllm.max_model_len, in_process=True, method=method,
        )  # fmt: skip

    def alone_engine(path: Path) -> VllmEngine:
        return VllmEngine(
            path,
            params.pair.dtype,
            eos,
            vllm.max_model_len,
            engine_kwargs=vllm.engine_kwargs,
            in_process=True,
        )

    with engine_environment(plugin=False):
        alone = {name: alone_engine(path) for name, path in {TARGET: params.pair.target, **drafts}.items()}
        engines = {name: spec("draft_model", path) for name, path in drafts.items()}
        engines[EAGLE_SD] = spec("eagle", eagle.out)

    def alone_decoder(engine):
        return lambda batch: [
            (t, len(t)) for t in engine.continue_prefixes(list(batch), [max_new] * len(batch))
        ]

    def spec_decoder(llm):
        return lambda batch: [(r.tokens, r.target_passes) for r in decode(llm, batch, max_new, eos)]

    decoders = {TARGET: alone_decoder(alone[TARGET])}
    decoders.update({name: spec_decoder(llm) for name, llm in engines.items()})
    # no separate accuracy pass: greedy decoding gives every pass the same tokens (checked per run below)
    measured = measure(decoders, timed, [], BATCH_SIZES, 0, args.repeats, lambda: PowerMeter(0.5))
    outputs = {name: measured.runs[name][max(BATCH_SIZES)][0].outputs for name in decoders}
    alone_prompts = prompts[:alone_count]
    draft_outputs = {
        name: alone[name].continue_prefixes(alone_prompts, [max_new] * alone_count) for name in drafts
    }
    for engine in alone.values():
        engine.close()
    responses = outputs[TARGET]
    head = load_head(Path(eagle.out), pair.target)
    guesses = {
        name: DraftPredictor(
            load_causal_lm(path, torch.float32, role="draft"), pair.vocab_size, pair.pad_token_id
        ).predict(timed, responses)
        for name, path in drafts.items()
    }
    guesses[EAGLE_SD] = EaglePredictor(head, pair.target, pair.vocab_size).predict(timed, responses)
    figures = {name: per_problem(measured.runs[name][1]) for name in decoders}
    settings = {}
    for name in decoders:
        row = {
            "batch_size": {size: summarize_runs(measured.runs[name][size]) for size in BATCH_SIZES},
            "per_problem_batch_size_1": figures[name],
            "accuracy": accuracy(task, examples[: args.problems], pair.tokenizer, outputs[name]),
        }
        if name != TARGET:
            row["same_tokens_as_target"] = outputs[name] == responses
            row["agreement"] = agreement(guesses[name], responses)
            row["mat"] = _interval(
                list(zip(figures[name]["tokens"], figures[name]["passes"], strict=True)), rate_of_first
            )
            row["tokens_per_s_vs_target_bs1"] = rate_comparison(
                figures[name], figures[TARGET], "tokens", "seconds", STATS
            )
            row["tokens_per_s_vs_target_bs8"] = round(
                row["batch_size"][8]["tokens_per_s"] / settings[TARGET]["batch_size"][8]["tokens_per_s"], 3
            )
        if name in drafts:
            row["draft"] = str(drafts[name])
            row["alone_accuracy"] = accuracy(
                task, examples[:alone_count], pair.tokenizer, draft_outputs[name]
            )
        settings[name] = row
    report = {
        "command": "python results/proposers/proposers.py " + " ".join(sys.argv[1:]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "processor": processor_name(),
        "cpus": os.cpu_count(),
        "load_average_1m": [load_before, os.getloadavg()[0]],
        "task": params.task.name,
        "split": "test",
        "problems": args.problems,
        "alone_problems": alone_count,
        "window": args.window,
        "repeats": args.repeats,
        "target": str(params.pair.target),
        "eagle_head": str(eagle.out),
        "settings": settings,
    }
    write_json(args.out / "proposers.json", report)
    write_text(args.out / "proposers.md", markdown(report) + "\n")
    print(markdown(report))


def _ci(figure: dict, scale: float = 1.0, digits: int = 2) -> str:
    return (
        f"{figure['point'] * scale:.{digits}f} [{figure['low'] * scale:.{digits}f}, "
        f"{figure['high'] * scale:.{digits}f}]"
    )


def markdown(report: dict) -> str:
    settings, window = report["settings"], report["window"]
    alone_problems = report.get("alone_problems", report["problems"])
    lines = [
        f"# Proposers of {report['target']} ({report['task']} {report['split']}, {report['problems']} problems, "
        f"W = {window}; {report['date']}, {report['processor']}, {report['cpus']} cores)",
        "",
        f"| proposer | agreement | alone: accuracy % ({alone_problems} problems) | exact SD: MAT | tokens/s vs target, bs 1 | bs 8 | "
        "same tokens as target |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in settings.items():
        if name == TARGET:
            continue
        speed = row["tokens_per_s_vs_target_bs1"]
        alone = _ci(row["alone_accuracy"], 100, 1) if "alone_accuracy" in row else "(no model of its own)"
        lines.append(
            f"| {name.removeprefix('SD, ')} | {_ci(row['agreement'], 100, 1)} % | {alone} | "
            f"{_ci(row['mat'])} | {speed['point']:.2f}x [{speed['low']:.2f}, {speed['high']:.2f}] | "
            f"{row['tokens_per_s_vs_target_bs8']:.2f}x | {row['same_tokens_as_target']} |"
        )
    target = settings[TARGET]
    lines += [
        "",
        f"Target alone: accuracy {_ci(target['accuracy'], 100, 1)} %, "
        + ", ".join(f"{target['batch_size'][s]['tokens_per_s']} tokens/s at bs {s}" for s in BATCH_SIZES)
        + f". Load average (1 min) before and after: {report['load_average_1m']}.",
        "",
        "```",
        report["command"],
        "```",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
