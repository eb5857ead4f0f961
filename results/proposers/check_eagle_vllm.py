"""vLLM's ``eagle`` speculative method on CPU with an EAGLE head trained here for the toy target (issue 37).

1. The toy target's greedy responses (transformers) to toy word problems: training and held-out rows.
2. A head trained on them for a few hundred steps (`autojudge.models.eagle_training`) into a temporary
   directory, saved as vLLM loads it.
3. An offline simulation of vLLM's greedy EAGLE loop with that head on the check prompts (draft chain
   of ``K`` tokens from the teacher-forced prefix, accept the longest matching run plus the bonus
   token): the acceptance length vLLM should report if it computes what the head computes.
4. vLLM on CPU (``VLLM_PLUGINS=none``: the project's plugin stays out; engines in this process, as the
   project starts them on CPU): the target alone, then exact (greedy) speculative decoding with
   ``{"method": "eagle", "model": <head>, "num_speculative_tokens": K}``. Greedy SD must emit the
   target's greedy tokens; the acceptance length comes from the engine's spec-decode counters.

Run from the repository root: ``PYTHONPATH=src .venv/bin/python results/proposers/check_eagle_vllm.py
[OUT.json]``. It prints one JSON summary (and writes it to OUT.json if given).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET = REPO / "models" / "toy_mixed" / "target"
K = 4  # num_speculative_tokens
MAX_NEW_TOKENS = 128
SPLITS = {"train": 400, "validation": 40, "test": 16}  # arith splits (seed 0): head rows, held out, checked
ENGINE = {"kv_cache_memory_bytes": 268435456, "enforce_eager": True, "max_model_len": 512, "dtype": "float32"}


def toy_rows(tokenizer, target) -> dict:
    """``{split: [(prompt ids, the target's greedy response ids)]}`` for the arith splits of SPLITS."""
    from autojudge.engines.hf import HFEngine
    from autojudge.models.pair import eos_token_ids
    from autojudge.tasks.arith import arith_prompt, arith_split_rows

    eos = eos_token_ids(tokenizer, target.generation_config.eos_token_id)
    engine = HFEngine(target, tokenizer.pad_token_id, eos, batch_size=32)
    rows = {}
    for split, count in SPLITS.items():
        prompts = [tokenizer.encode(arith_prompt(r["question"])) for r in arith_split_rows(split, count, 0)]
        responses = engine.continue_prefixes(prompts, [MAX_NEW_TOKENS] * len(prompts))
        rows[split] = list(zip(prompts, responses, strict=True))
    return rows


def examples_of(target, rows):
    from autojudge.models.eagle import build_examples

    return build_examples(target, [p + r for p, r in rows], [len(p) for p, _ in rows])


def simulate(head, target, rows) -> dict:
    """vLLM's greedy EAGLE loop offline: per step, the head reads the accepted prefix teacher-forced
    (token t+1 with the target's hidden state t), chains K drafts on its own outputs, and the longest
    run equal to the target's greedy tokens is accepted with one bonus token. Drafts past the end of a
    response are checked against the target's greedy tokens there, as vLLM's rejection sampler (and its
    counters) check them before the output is cut at EOS or max_tokens."""
    import torch

    from autojudge.models.eagle import target_hidden_states

    drafts = accepted = 0
    per_position = [0] * K
    with torch.no_grad():
        for prompt, response in rows:
            sequence = prompt + response
            hidden = target_hidden_states(target, [sequence])[0]
            greedy = list(sequence)
            for _ in range(K):  # the target's argmax past the end, where the last drafts are verified
                greedy.append(int(target(torch.tensor([greedy])).logits[0, -1].argmax()))
            known = len(prompt)  # index of the last known token: the target's first token comes from prefill
            while known < len(sequence) - 1:
                tokens = list(sequence[1 : known + 1])
                states = [hidden[:known]]
                guesses = []
                for _ in range(K):
                    out = head(torch.tensor([tokens]), torch.cat(states)[None])[0, -1]
                    guesses.append(int(head.logits(out).argmax()))
                    tokens.append(guesses[-1])
                    states.append(out[None])
                run = 0
                while run < K and guesses[run] == greedy[known + 1 + run]:
                    run += 1
                drafts += 1
                accepted += run
                for position in range(run):
                    per_position[position] += 1
                known += run + 1
    return {
        "vllm:spec_decode_num_drafts": drafts,
        "vllm:spec_decode_num_accepted_tokens": accepted,
        "vllm:spec_decode_num_accepted_tokens_per_pos": per_position,
        "acceptance_length": round(1 + accepted / drafts, 4),
    }


def vllm_generate(prompts, speculative: dict | None) -> tuple[list[list[int]], dict]:
    """Greedy continuations from an in-process vLLM engine on the toy target; its spec-decode counters."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    from autojudge.engines.vllm_engine import create_llm

    kwargs = dict(ENGINE)
    if speculative is not None:
        kwargs.update(speculative_config=speculative, disable_log_stats=False)
    started = time.perf_counter()
    llm = create_llm(True, model=str(TARGET), seed=0, **kwargs)
    start_seconds = time.perf_counter() - started
    try:
        sampling = SamplingParams(temperature=0.0, max_tokens=MAX_NEW_TOKENS, detokenize=False)
        started = time.perf_counter()
        results = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], sampling, use_tqdm=False)
        timing = {"start_s": round(start_seconds, 1), "generate_s": round(time.perf_counter() - started, 2)}
        counters = {}
        if speculative is not None:
            for metric in llm.get_metrics():
                if metric.name.startswith("vllm:spec_decode"):
                    value = getattr(metric, "value", None)
                    counters[metric.name] = value if value is not None else list(metric.values)
        return [list(r.outputs[0].token_ids) for r in results], {**timing, **counters}
    finally:
        llm.llm_engine.engine_core.shutdown()


def main() -> dict:
    import torch
    import vllm

    from autojudge.models.eagle_training import HEAD, EagleTraining, train_head
    from autojudge.models.pair import load_causal_lm, load_tokenizer

    report: dict = {
        "vllm": vllm.__version__,
        "torch": torch.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "num_speculative_tokens": K,
    }
    target = load_causal_lm(TARGET, torch.float32, role="target")
    tokenizer = load_tokenizer(TARGET, "target")
    started = time.perf_counter()
    rows = toy_rows(tokenizer, target)
    report["responses_s"] = round(time.perf_counter() - started, 1)
    settings = EagleTraining(
        max_steps=400, batch_size=16, learning_rate=3e-3, eval_every=50, checkpoint_every=100, patience=4
    )
    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        head, curve = train_head(
            target, examples_of(target, rows["train"]), examples_of(target, rows["validation"]), settings,
            Path(directory),
        )  # fmt: skip
        report["training"] = {
            "seconds": round(time.perf_counter() - started, 1),
            "settings": curve["settings"],
            "curve": [(p["step"], p["agreement"]) for p in curve["points"]],
            "best_step": curve["best_step"],
            "held_out_agreement": round(curve["best_agreement"], 4),
            "stopped": curve["stopped"],
            "head_files": sorted(p.name for p in (Path(directory) / HEAD).iterdir()),
        }
        check = rows["test"]
        report["simulated"] = simulate(head, target, check)
        prompts = [p for p, _ in check]
        reference = [r for _, r in check]
        try:
            alone, report["target_alone"] = vllm_generate(prompts, None)
            speculative = {
                "method": "eagle",
                "model": str(Path(directory) / HEAD),
                "num_speculative_tokens": K,
            }
            eagle, report["eagle"] = vllm_generate(prompts, speculative)
        except Exception as error:  # report where vLLM refused or crashed, then stop
            report["vllm_error"] = f"{type(error).__name__}: {error}"
            report["vllm_traceback"] = traceback.format_exc().splitlines()[-25:]
            return report
    counters = report["eagle"]
    drafts = counters.get("vllm:spec_decode_num_drafts")
    if drafts:
        counters["acceptance_length"] = round(
            1 + counters["vllm:spec_decode_num_accepted_tokens"] / drafts, 4
        )
    report["simulated_equals_vllm_counters"] = all(
        report["simulated"][name] == counters.get(name) for name in report["simulated"]
    )
    report["exact_sd_equals_target_alone"] = eagle == alone
    report["rows_differing"] = [i for i, (a, b) in enumerate(zip(alone, eagle, strict=True)) if a != b]
    report["vllm_target_equals_transformers_greedy"] = alone == reference
    report["generated_tokens"] = sum(len(o) for o in eagle)
    return report


if __name__ == "__main__":
    os.environ["VLLM_PLUGINS"] = "none"  # the project's general plugin stays out of every engine
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    summary = main()
    text = json.dumps(summary, indent=2)
    print(text)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text + "\n", encoding="utf-8")
