"""Train the toy draft/target pair: small LlamaForCausalLM models on an endless stream of toy problems."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import torch
from tqdm import tqdm
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from autojudge.engines.hf import HFEngine
from autojudge.models.batches import padded_batch
from autojudge.models.pair import save_checkpoint
from autojudge.models.tokenizer import load_tokenizer
from autojudge.params import ToyModelParams, ToyParams
from autojudge.world.corpus import Probe, TrainingText, held_out_keys, probes, text_stream
from autojudge.world.tokenizer import train_toy_tokenizer


def build_model(spec: ToyModelParams, tokenizer: PreTrainedTokenizerFast, seed: int) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.heads,
        intermediate_size=spec.intermediate_size,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    return LlamaForCausalLM(config)


def _encode_batch(
    pairs: list[tuple[str, str]], tokenizer: PreTrainedTokenizerFast
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token ids, attention mask and labels (prompt tokens masked with -100)."""
    rows = [
        (
            tokenizer.encode(prompt),  # starts with BOS
            [*tokenizer.encode(response, add_special_tokens=False), tokenizer.eos_token_id],
        )
        for prompt, response in pairs
    ]
    return padded_batch(rows, tokenizer.pad_token_id)


def _learning_rate(step: int, spec: ToyModelParams) -> float:
    if step < spec.warmup_steps:
        return spec.learning_rate * (step + 1) / spec.warmup_steps
    progress = (step - spec.warmup_steps) / max(1, spec.steps - spec.warmup_steps)
    return spec.learning_rate * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))


class AccuracyProbe:
    """Greedy accuracy of a model in training on a few held-out problems of each source."""

    def __init__(self, tokenizer: PreTrainedTokenizerFast, probes: list[Probe], max_new_tokens: int) -> None:
        self.tokenizer = tokenizer
        self.probes = probes
        self.prompts = [[tokenizer.encode(p.task.build_prompt(e)) for e in p.examples] for p in probes]
        self.max_new_tokens = max_new_tokens

    def __call__(self, model: LlamaForCausalLM) -> dict[str, float]:
        model.eval()
        engine = HFEngine(model, self.tokenizer.pad_token_id, {self.tokenizer.eos_token_id}, batch_size=64)
        accuracy = {}
        for probe, prompts in zip(self.probes, self.prompts, strict=True):
            responses = engine.continue_prefixes(prompts, [self.max_new_tokens] * len(prompts))
            texts = [self.tokenizer.decode(r, skip_special_tokens=True) for r in responses]
            accuracy[probe.source] = round(sum(probe.task.scores(texts, probe.examples)) / len(texts), 4)
        model.train()
        return accuracy


def train_model(
    spec: ToyModelParams,
    tokenizer: PreTrainedTokenizerFast,
    seed: int,
    stream: Iterator[TrainingText],
    label: str,
    probe: AccuracyProbe | None = None,
    probe_every: int = 500,
    device: str = "cpu",
) -> tuple[LlamaForCausalLM, list[dict]]:
    """Train one toy model from scratch; return it in eval mode with its history (loss, probe accuracy)."""
    model = build_model(spec, tokenizer, seed).to(device)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=spec.learning_rate, betas=(0.9, 0.95), weight_decay=spec.weight_decay
    )
    model.train()
    started = time.perf_counter()
    progress = tqdm(range(spec.steps), desc=f"train {label}", mininterval=10)
    running = None
    history: list[dict] = []
    for step in progress:
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(step, spec)
        batch = [(text.prompt, text.response) for text in islice(stream, spec.batch_size)]
        ids, mask, labels = _encode_batch(batch, tokenizer)
        loss = model(input_ids=ids.to(device), attention_mask=mask.to(device), labels=labels.to(device)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        running = loss.item() if running is None else 0.98 * running + 0.02 * loss.item()
        progress.set_postfix(loss=f"{running:.4f}", minutes=f"{(time.perf_counter() - started) / 60:.1f}")
        if probe is not None and ((step + 1) % probe_every == 0 or step + 1 == spec.steps):
            history.append(
                {
                    "step": step + 1,
                    "loss": round(running, 4),
                    "probe_accuracy": probe(model),
                    "minutes": round((time.perf_counter() - started) / 60, 2),
                }
            )
            progress.write(f"{label} step {step + 1}: {history[-1]}")
    model.eval()
    return model.cpu(), history


def save_model(model: LlamaForCausalLM, tokenizer: PreTrainedTokenizerFast, directory: Path) -> None:
    save_checkpoint(model, tokenizer, directory)


def train_toy_pair(
    toy: ToyParams, out_dir: Path, roles: tuple[str, ...] = ("target", "draft")
) -> dict[str, list[dict]]:
    """Train the tokenizer, then each of ``roles`` (target, draft) on its mixture; save them under
    ``out_dir``; return their histories. Without the target, the draft reuses ``out_dir/target``'s tokenizer."""
    torch.set_num_threads(toy.threads)
    if "target" in roles:
        corpus = islice(text_stream(toy.seed + 7919, toy.mixture, excluded=set()), toy.tokenizer_corpus)
        tokenizer = train_toy_tokenizer(
            (text.prompt + text.response for text in corpus), toy.tokenizer_vocab_size
        )
    else:
        tokenizer = load_tokenizer(out_dir / "target", "target")
    probe = AccuracyProbe(tokenizer, probes(toy), max_new_tokens=192)
    excluded = held_out_keys(toy)
    histories = {}
    for role, offset in (("target", 0), ("draft", 1)):
        if role not in roles:
            continue
        spec = getattr(toy, role)
        stream = text_stream(toy.seed + offset, spec.mixture or toy.mixture, excluded)
        model, histories[role] = train_model(
            spec, tokenizer, toy.seed + offset, stream, role, probe, toy.probe_every, toy.device
        )
        save_model(model, tokenizer, out_dir / role)
    return histories
