"""Fine-tuning a converted checkpoint on a task's training split with a LoRA adapter, resumably.

Rows are (prompt, reference solution + end of turn) as the pair is prompted (chat template or not);
the loss is the response's tokens only (``distill.response_loss``). Every ``eval_every`` steps the
adapter is scored on the first problems of each evaluation split (greedy, transformers) and the run is
checkpointed (adapter, optimizer, random states, curve) beside the adapter, so an interrupted run goes
on from its last checkpoint; a finished run writes the adapter (safetensors, with its settings in the
metadata) and its learning curve.

The learning rate is constant, then falls linearly to 0 over the last ``decay_steps`` (a
warmup-stable-decay schedule without warmup). Up to the decay the schedule does not depend on the run's
length, so a longer run goes on from a shorter one: from its checkpoint (exactly), or, where only the
committed adapter is left, from the adapter's weights with AdamW's moments and the row order restarted
(recorded in the curve as ``restarts``).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from tqdm import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from autojudge.engines.hf import HFEngine
from autojudge.errors import InputError
from autojudge.io import atomic_path, write_json
from autojudge.models.batches import padded_batch
from autojudge.models.distill import response_loss
from autojudge.models.lora import adapter_state, add_lora, load_adapter_state
from autojudge.models.pair import weights_digest
from autojudge.models.prompts import encode_prompt
from autojudge.models.tokenizer import eos_token_ids
from autojudge.params import FinetuneParams
from autojudge.tasks.base import Example, Task

Row = tuple[list[int], list[int]]


def training_rows(
    task: Task, examples: list[Example], tokenizer: PreTrainedTokenizerBase, chat_template: bool
) -> list[Row]:
    """(prompt ids, solution ids + end of turn) of each example with a reference solution."""
    end = tokenizer.eos_token_id
    rows = []
    for example in examples:
        if not example.solution:
            raise InputError(
                f"fine-tuning needs reference solutions; {task.name} example {example.id} has none"
            )
        prompt = encode_prompt(tokenizer, task.build_prompt(example), chat_template)
        response = tokenizer.encode(example.solution if chat_template else " " + example.solution)
        rows.append((prompt, [t for t in response if t != tokenizer.bos_token_id] + [end]))
    return rows


def pad_id(tokenizer: PreTrainedTokenizerBase) -> int:
    """The tokenizer's padding id (its EOS where it has none; id 0 is a real id)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


@dataclass
class Evaluation:
    """Problems a run is scored on: prompt ids per split, and the examples to score against."""

    task: Task
    prompts: dict[str, list[list[int]]]
    examples: dict[str, list[Example]]
    max_new_tokens: int

    def solved(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, batch_size: int) -> dict:
        """Split -> whether greedy decoding solves each problem, in the split's order."""
        eos = eos_token_ids(tokenizer, model.generation_config.eos_token_id)
        engine = HFEngine(model, pad_id(tokenizer), eos, batch_size)
        solved = {}
        for split, prompts in self.prompts.items():
            responses = engine.continue_prefixes(prompts, [self.max_new_tokens] * len(prompts))
            texts = [tokenizer.decode(r, skip_special_tokens=True) for r in responses]
            solved[split] = [self.task.score(t, e) for t, e in zip(texts, self.examples[split], strict=True)]
        return solved

    def accuracy(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, batch_size: int) -> dict:
        """Greedy accuracy on each split."""
        solved = self.solved(model, tokenizer, batch_size)
        return {split: round(sum(rows) / len(rows), 4) for split, rows in solved.items()}


def checkpoint_path(adapter: Path) -> Path:
    return Path(adapter).with_name(f"{Path(adapter).name}.checkpoint.pt")


def curve_path(adapter: Path) -> Path:
    return Path(adapter).with_name(f"{Path(adapter).stem}.curve.json")


def run_settings(settings: FinetuneParams, chat_template: bool) -> dict:
    """What determines a run but its length (a checkpoint of other settings is not resumed; a longer run
    goes on from a shorter one's)."""
    excluded = {"adapter", "out", "steps", "decay_steps", "eval_every", "eval_problems", "eval_batch_size"}
    fields = settings.model_dump(mode="json", exclude=excluded)
    return {**fields, "base_sha256": weights_digest(settings.base), "chat_template": chat_template}


def learning_rate_at(step: int, settings: FinetuneParams) -> float:
    """The rate of training step ``step`` (0-based): constant, then linear to 0 over the last decay_steps."""
    decay_start = settings.steps - settings.decay_steps
    if step < decay_start:
        return settings.learning_rate
    return settings.learning_rate * (settings.steps - step) / (settings.decay_steps + 1)


def _resumable(state: dict, settings: FinetuneParams) -> bool:
    """Whether a run saved at ``state`` continues into this schedule (same schedule, or not yet decaying)."""
    same = state.get("schedule") == [settings.steps, settings.decay_steps]
    return same or state["step"] <= settings.steps - settings.decay_steps


def _restart_from_adapter(model, settings: FinetuneParams, made_by: dict) -> dict | None:
    """The state of a run restarted from the committed adapter of the same settings, if one is there."""
    if not Path(settings.adapter).is_file() or not curve_path(settings.adapter).is_file():
        return None
    tensors, _, steps, adapter_made_by = read_adapter(settings.adapter)
    state = {"step": steps, "curve": [], "losses": [], "seconds": 0.0}
    if adapter_made_by != made_by or not _resumable(state, settings) or steps >= settings.steps:
        return None
    summary = json.loads(curve_path(settings.adapter).read_text())
    load_adapter_state(model, tensors)
    print(f"finetune: no checkpoint; restarting at step {steps} from {settings.adapter} (AdamW restarted)")
    return {
        **state,
        "curve": summary["curve"],
        "seconds": summary["training_seconds"],
        "restarts": [*summary.get("restarts", []), steps],
    }


def train_adapter(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    rows: list[Row],
    evaluation: Evaluation,
    settings: FinetuneParams,
    made_by: dict,
) -> dict:
    """Train a LoRA adapter on ``rows`` (resuming a matching checkpoint); save it and its curve."""
    torch.manual_seed(settings.seed)  # the adapter's initial A, then dropout-free training's draws
    trainable = add_lora(model, settings.rank, settings.alpha)
    optimizer = torch.optim.AdamW(trainable, lr=settings.learning_rate, weight_decay=0.0)
    order = random.Random(settings.seed)
    state = {"step": 0, "curve": [], "losses": [], "seconds": 0.0}
    saved = checkpoint_path(settings.adapter)
    kept = torch.load(saved, weights_only=False) if saved.is_file() else None
    if kept is not None and kept["made_by"] == made_by and _resumable(kept["state"], settings):
        load_adapter_state(model, kept["adapter"])
        optimizer.load_state_dict(kept["optimizer"])
        order.setstate(kept["order"])
        torch.set_rng_state(kept["torch_rng"])
        state = kept["state"]
        print(f"finetune: resumed at step {state['step']} from {saved}")
    elif (restarted := _restart_from_adapter(model, settings, made_by)) is not None:
        state = restarted
        order = random.Random(f"{settings.seed}-{state['step']}")
    state["schedule"] = [settings.steps, settings.decay_steps]
    pad = pad_id(tokenizer)

    def evaluate() -> None:
        model.eval()
        scores = evaluation.accuracy(model, tokenizer, settings.eval_batch_size)
        state["curve"].append({"step": state["step"], **scores})
        print(f"finetune: step {state['step']}: accuracy {scores}")
        model.train()

    if not state["curve"]:
        evaluate()
    model.train()
    progress = tqdm(total=settings.steps, initial=state["step"], desc="finetune", unit="step", mininterval=5)
    while state["step"] < settings.steps:
        started = time.perf_counter()
        batch = padded_batch(order.sample(rows, min(settings.batch_size, len(rows))), pad)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=settings.bf16_autocast):
            loss = response_loss(model, *batch)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate_at(state["step"], settings)
        optimizer.step()
        state["losses"].append(round(float(loss.detach()), 4))
        state["step"] += 1
        state["seconds"] += time.perf_counter() - started
        progress.update()
        if state["step"] % settings.eval_every == 0 or state["step"] == settings.steps:
            evaluate()
            _save_checkpoint(saved, model, optimizer, order, state, made_by)
    progress.close()
    model.eval()
    return _save_adapter(model, settings, state, made_by)


def _save_checkpoint(path: Path, model, optimizer, order: random.Random, state: dict, made_by: dict) -> None:
    kept = {
        "made_by": made_by,
        "adapter": adapter_state(model),
        "optimizer": optimizer.state_dict(),
        "order": order.getstate(),
        "torch_rng": torch.get_rng_state(),
        "state": state,
    }
    with atomic_path(path) as temporary:
        torch.save(kept, temporary)


def _save_adapter(model: PreTrainedModel, settings: FinetuneParams, state: dict, made_by: dict) -> dict:
    adapter = Path(settings.adapter)
    metadata = {
        "made_by": json.dumps(made_by, sort_keys=True),
        "alpha": str(settings.alpha),
        "steps": str(state["step"]),
    }
    with atomic_path(adapter) as temporary:
        save_file(adapter_state(model), str(temporary), metadata=metadata)
    summary = {
        "steps": state["step"],
        "training_seconds": round(state["seconds"], 1),
        "seconds_per_step": round(state["seconds"] / max(1, state["step"]), 2),
        "loss_first_10": round(sum(state["losses"][:10]) / max(1, len(state["losses"][:10])), 4),
        "loss_last_10": round(sum(state["losses"][-10:]) / max(1, len(state["losses"][-10:])), 4),
        "curve": state["curve"],
        "schedule": {"learning_rate": settings.learning_rate, "decay_steps": settings.decay_steps},
        "restarts": state.get("restarts", []),
        "made_by": made_by,
    }
    write_json(curve_path(adapter), summary)
    return summary


def read_adapter(path: Path) -> tuple[dict[str, torch.Tensor], float, int, dict]:
    """A saved adapter's tensors, its alpha, its training steps and the settings that made it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"LoRA adapter not found: {path} (train it: autojudge finetune train)")
    from safetensors import safe_open

    with safe_open(str(path), "pt") as handle:
        metadata = handle.metadata() or {}
    if not {"alpha", "steps", "made_by"} <= set(metadata):
        raise InputError(f"{path} is not an adapter written by autojudge finetune (no alpha/steps/made_by)")
    return (
        load_file(str(path)),
        float(metadata["alpha"]),
        int(metadata["steps"]),
        json.loads(metadata["made_by"]),
    )
