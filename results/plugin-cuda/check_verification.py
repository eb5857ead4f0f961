"""The plugin's verification step on a CUDA device, without vLLM: every registered rule decides a batch
of greedy and sampled rows there as on the CPU, emits the same greedy tokens, and the step never waits
for the host (torch's CUDA sync debug mode turns a synchronising call into an error). The CPU workaround
for vLLM 0.32's expand_batch_to_tokens leaves a CUDA runner alone.

Run from the repository root: ``PYTHONPATH=src python results/plugin-cuda/check_verification.py OUT.json``.
"""

from __future__ import annotations

import json
import platform
import sys
from dataclasses import replace
from datetime import date
from pathlib import Path

import torch

from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.rules.acceptance import Window
from autojudge.rules.build import build_rule
from autojudge.rules.config import HEADS, RULES, RuleConfig
from autojudge.vllm_plugin.patches import patch_expand_batch_to_tokens
from autojudge.vllm_plugin.verify import accepted_rows, greedy_verify

DRAFTS, VOCAB, HIDDEN, K = [4, 2, 3, 4], 64, 16, 4


def config_of(rule: str) -> RuleConfig:
    if rule == "topk":
        return RuleConfig(rule, top_k=3)
    threshold = {"fsd-js": 0.3, "fsd-js-published": 0.3}.get(rule, 0.5)
    return RuleConfig(rule) if rule == "exact" else RuleConfig(rule, threshold=threshold)


def batch(device: str) -> dict:
    generator = torch.Generator().manual_seed(0)
    rows = sum(DRAFTS)
    target = 3 * torch.randn(rows, VOCAB, generator=generator)
    draft_logits = target + torch.randn(rows, VOCAB, generator=generator)
    draft = draft_logits.argmax(dim=-1).to(torch.int32)
    draft[5] = -1  # a placeholder row (drafter skipped)
    uniform = torch.rand(rows, generator=generator)
    probs = torch.softmax(target, dim=-1)
    native = probs.gather(1, draft.long().clamp(min=0).unsqueeze(1)).squeeze(1) >= uniform
    values = {
        "draft": draft,
        "target": target,
        "draft_logits": draft_logits,
        "hidden": torch.randn(rows, HIDDEN, generator=generator),
        "cu": torch.tensor(DRAFTS).cumsum(0).to(torch.int32),
        "sampled": torch.tensor([i % 2 == 1 for i, n in enumerate(DRAFTS) for _ in range(n)]),
        "native": native & (draft >= 0),
        "lossy_allowed": torch.ones(rows, dtype=torch.bool),
        "bonus": torch.arange(len(DRAFTS), dtype=torch.int32).unsqueeze(1),
    }
    return {key: value.to(device) for key, value in values.items()}


def decide(rule_name: str, device: str, head: JudgeHead) -> dict:
    b = batch(device)
    on_device = replace(head, weight=head.weight.to(device))  # as the judge runner loads it
    rule = build_rule(config_of(rule_name), K, on_device if rule_name in HEADS else None)
    window = Window(b["draft"], b["target"], b["draft_logits"], b["hidden"], cu_num_draft_tokens=b["cu"])
    sampled_window = Window(
        b["draft"],
        b["target"],
        b["draft_logits"],
        b["hidden"],
        cu_num_draft_tokens=b["cu"],
        native=b["native"],
    )
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
    try:
        greedy = accepted_rows([rule], None, window, b["lossy_allowed"])
        tokens = greedy_verify(b["draft"], b["cu"], K, b["target"], b["bonus"], greedy)
        sampled = accepted_rows([rule], None, sampled_window, b["lossy_allowed"], b["sampled"])
    finally:
        if device == "cuda":
            torch.cuda.set_sync_debug_mode("default")
    return {"greedy": greedy.tolist(), "tokens": tokens.tolist(), "sampled": sampled.tolist()}


def main(out: str) -> None:
    head = JudgeHead(
        torch.randn(HIDDEN, generator=torch.Generator().manual_seed(1)), 0.0, 0.5,
        FeatureSpec("target", HIDDEN, HIDDEN), "check", "check", "none",
    )  # fmt: skip
    rules = {}
    for name in RULES:
        cpu, cuda = decide(name, "cpu", head), decide(name, "cuda", head)
        rules[name] = {"same_as_cpu": cpu == cuda, "accepted_rows_greedy": sum(cpu["greedy"])}
    report = {
        "date": date.today().isoformat(),
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "rules": rules,
        "every_rule_same_as_cpu": all(r["same_as_cpu"] for r in rules.values()),
        "cuda_runner_leaves_expand_batch_to_tokens_alone": not patch_expand_batch_to_tokens(
            torch.device("cuda")
        ),
    }
    Path(out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main(sys.argv[1])
