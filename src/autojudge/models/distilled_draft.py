"""Stage distill's work: the target's greedy responses to a task's prompts, a draft trained on them, saved.

The responses are generated once (vLLM, or transformers for tiny runs) and kept beside the draft in
``<out>.responses.json`` with the settings that made them, so a rerun that changes only the training
settings (layers, steps, learning rate) does not generate them again. Stage eagle trains on them too
(``target_responses`` of its own entry, kept beside its head).
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from autojudge.errors import InputError
from autojudge.io import read_json, write_json
from autojudge.models.distill import agreement, distill, is_frozen, truncated_draft
from autojudge.models.pair import load_causal_lm, model_signature, save_checkpoint
from autojudge.models.prompts import encode_prompt
from autojudge.models.tokenizer import eos_token_ids, load_tokenizer, tokenizer_hash
from autojudge.params import DistillParams, ResponsesParams, VllmParams, task_data_dir
from autojudge.tasks import get_task

Row = tuple[list[int], list[int]]


def responses_path(out: Path) -> Path:
    return Path(out).with_name(f"{Path(out).name}.responses.json")


def _generate(
    settings: ResponsesParams,
    vllm: VllmParams,
    target: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: list[list[int]],
) -> list[list[int]]:
    """The target's greedy responses to ``prompts`` with the engine of ``settings.engine``."""
    eos = eos_token_ids(tokenizer, target.generation_config.eos_token_id)
    if settings.engine == "vllm":
        from autojudge.engines.vllm_engine import VllmEngine

        engine = VllmEngine(
            settings.target,
            "float32",
            eos,
            vllm.max_model_len,
            vllm.tensor_parallel_size,
            seed=settings.seed,
            engine_kwargs=vllm.engine_kwargs,
            in_process=vllm.in_process,
        )
    else:
        from autojudge.engines.hf import HFEngine

        engine = HFEngine(target, tokenizer.pad_token_id, eos, settings.batch_size)
    try:
        return engine.continue_prefixes(prompts, [settings.max_response_tokens] * len(prompts))
    finally:
        engine.close()


def target_responses(
    settings: ResponsesParams,
    chat_template: bool,
    vllm: VllmParams,
    target: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
) -> dict:
    """``{"train": rows, "evaluation": rows, "target_accuracy": float}``, generated or read back."""
    task = get_task(settings.task, task_data_dir(settings.task))
    splits = {
        "train": [settings.split, settings.problems],
        "evaluation": [settings.eval_split, settings.eval_problems],
    }
    examples = {name: task.load_split(split, limit) for name, (split, limit) in splits.items()}
    prompts = {
        name: [encode_prompt(tokenizer, task.build_prompt(e), chat_template) for e in split]
        for name, split in examples.items()
    }
    made_by = {
        "target": model_signature(settings.target),
        "tokenizer": tokenizer_hash(tokenizer),
        "task": settings.task,
        "splits": splits,
        "engine": settings.engine,
        "max_response_tokens": settings.max_response_tokens,
        "chat_template": chat_template,
    }
    cache = responses_path(settings.out)
    if cache.is_file() and (kept := read_json(cache))["made_by"] == made_by:
        print(f"the target's responses read back from {cache}")
        return kept
    generated = _generate(settings, vllm, target, tokenizer, prompts["train"] + prompts["evaluation"])
    responses = {
        "train": generated[: len(prompts["train"])],
        "evaluation": generated[len(prompts["train"]) :],
    }
    solved = [
        task.equivalent(
            task.extract_answer(tokenizer.decode(response, skip_special_tokens=True)), example.answer
        )
        for example, response in zip(examples["evaluation"], responses["evaluation"], strict=True)
    ]
    result = {
        "made_by": made_by,
        **{name: [[p, r] for p, r in zip(prompts[name], responses[name], strict=True)] for name in prompts},
        "target_accuracy": sum(solved) / len(solved),
    }
    write_json(cache, result)
    return result


def build_draft(settings: DistillParams, chat_template: bool, vllm: VllmParams, name: str) -> dict:
    """Distil the draft of ``settings`` and save it; the figures of its metrics file."""
    torch.manual_seed(settings.seed)
    tokenizer = load_tokenizer(settings.target, "target")
    target = load_causal_lm(settings.target, torch.float32, role="target")
    responses = target_responses(settings, chat_template, vllm, target, tokenizer)
    train = [(p, r) for p, r in responses["train"] if r]
    evaluation = [(p, r) for p, r in responses["evaluation"] if r]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    vocab_size = target.config.vocab_size
    draft = truncated_draft(target, settings.layers)
    before = agreement(draft, vocab_size, pad, evaluation)
    started = time.perf_counter()
    losses = distill(
        draft, train, settings.steps, settings.batch_size, settings.learning_rate, pad, settings.seed
    )
    seconds = time.perf_counter() - started
    after = agreement(draft, vocab_size, pad, evaluation)
    if after < settings.min_agreement:
        raise InputError(
            f"distill.{name}: teacher-forced agreement {after:.3f} with the target on {settings.eval_split} "
            f"is below min_agreement {settings.min_agreement}: raise steps or layers"
        )
    draft.generation_config = target.generation_config
    save_checkpoint(draft, tokenizer, settings.out)
    return {
        "agreement": round(after, 4),
        "agreement_before_training": round(before, 4),
        "target_accuracy": round(responses["target_accuracy"], 4),
        "layers": settings.layers,
        "target_layers": target.config.num_hidden_layers,
        "parameters": sum(p.numel() for p in draft.parameters()),
        "trained_parameters": sum(p.numel() for n, p in draft.named_parameters() if not is_frozen(n)),
        "train_responses": len(train),
        "train_tokens": sum(len(r) for _, r in train),
        "evaluation_tokens": sum(len(r) for _, r in evaluation),
        "loss_first_10": round(sum(losses[:10]) / len(losses[:10]), 4),
        "loss_last_10": round(sum(losses[-10:]) / len(losses[-10:]), 4),
        "training_seconds": round(seconds, 1),
    }
