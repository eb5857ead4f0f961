"""The plugin's verification step on a CUDA device, against the same step on the CPU.

vLLM is not installed where a GPU is lent to this project, so this runs what the plugin's patched
``rejection_sample`` runs on the engine's device besides vLLM's own kernels: ``StepContext.decide_greedy``
and ``decide_sampled`` (``vllm_plugin/step.py``: the rules' decisions, the standard test, the lossy
permissions, the per-request lossy accepts, the forced uniforms), and the patch's greedy rows of a mixed
step (``greedy_verify``), with each head moved to the device as ``vllm_plugin/runner.py`` moves it
(``JudgeHead.to``). For every registered rule, and for all of them at once (a rule per request), on random
batches mixing greedy and sampled requests (with and without the drafter's probabilities) it checks that
the CUDA step accepts the same rows, emits the same tokens, hands vLLM the same uniforms and counts the
same lossy accepts as the CPU step, and records whether a step synchronises with the host
(``torch.cuda.set_sync_debug_mode``). The rules' keys are the one-core property test's
(``tests/rule_settings.py``, FLy's entropy bound lowered); the context head reads every feature group.

    PYTHONPATH=src python results/gpu/check_core_on_cuda.py --out results/gpu
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import types
from pathlib import Path

import torch


def _shim_safetensors() -> None:
    """The head artifact module imports safetensors at load; this check never reads or writes a file."""
    try:
        import safetensors  # noqa: F401
    except ImportError:
        shim = types.ModuleType("safetensors")
        shim.SafetensorError = OSError  # type: ignore[attr-defined]
        shim.safe_open = None  # type: ignore[attr-defined]
        shim_torch = types.ModuleType("safetensors.torch")
        shim_torch.load_file = shim_torch.save_file = None  # type: ignore[attr-defined]
        sys.modules.update({"safetensors": shim, "safetensors.torch": shim_torch})


_shim_safetensors()
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from rule_settings import HALFWAY_KEYS  # noqa: E402

from autojudge.features.spec import GROUPS, PAPER_GROUPS, TOKEN_CLASSES, FeatureSpec  # noqa: E402
from autojudge.heads.artifact import JudgeHead  # noqa: E402
from autojudge.rules.build import build_rule  # noqa: E402
from autojudge.rules.config import RULES, RuleConfig  # noqa: E402
from autojudge.rules.verification import greedy_verify, request_of_row  # noqa: E402
from autojudge.vllm_plugin.step import StepContext  # noqa: E402

V, H, K = 4096, 64, 8
GREEDY_TEMPERATURE = 0.0  # a greedy request's temperature in this check's batches
# FLy's entropy bound is lower here: over a 4096-token vocabulary the target's top-3 entropy stays below 0.85
RULE_KEYS = {**HALFWAY_KEYS, "fly": {**HALFWAY_KEYS["fly"], "threshold": 0.4}}


def _head(name: str, device: torch.device) -> JudgeHead:
    """A random head, moved as the runner moves it; the context head reads every feature group."""
    g = torch.Generator().manual_seed(7)
    spec = FeatureSpec("target", H, 0, GROUPS if name == "judge-context" else PAPER_GROUPS)
    weight = torch.randn(spec.dimension, generator=g) / spec.dimension**0.5
    classes = torch.randint(0, len(TOKEN_CLASSES), (V,), generator=g).to(torch.int8)
    token_class = classes if "token_classes" in spec.groups else None
    return JudgeHead(weight, 0.0, 0.5, spec, "pair", "task", "hash", token_class=token_class).to(device)


def _rule(name: str, device: torch.device):
    return build_rule(
        RuleConfig(name, **RULE_KEYS.get(name.removesuffix("-published"), {})), K, _head(name, device)
    )


def _batch(seed: int, requests: int, num_rules: int) -> dict[str, torch.Tensor]:
    """Flat rows of ``requests`` requests (a third greedy): logits, drafts among the target's top 3,
    a noisy drafter, a few forbidden drafts, uniforms, each request's temperature and rule."""
    g = torch.Generator().manual_seed(seed)
    counts = torch.randint(1, K + 1, (requests,), generator=g)
    rows = int(counts.sum())
    sampled = torch.arange(requests) % 3 != 1
    temperature = torch.where(sampled, 0.7 + torch.rand(requests, generator=g), GREEDY_TEMPERATURE)
    target = 2.5 * torch.randn(rows, V, generator=g)
    choice = torch.randint(0, 3, (rows,), generator=g)
    draft = target.topk(3, dim=-1).indices.gather(1, choice.unsqueeze(1)).squeeze(1)
    forbidden = torch.rand(rows, generator=g) < 0.05
    target[forbidden, draft[forbidden]] = float("-inf")
    draft_logits = target.clamp(min=-30) + torch.randn(rows, V, generator=g)
    return {
        "draft": draft.to(torch.int32),
        "target_logits": target,
        "draft_logits": draft_logits,
        "draft_probs": draft_logits.softmax(dim=-1),
        "hidden": torch.randn(rows, H, generator=g),
        "context_hidden": torch.randn(rows, H, generator=g),
        "cu": counts.cumsum(0).to(torch.int32),
        "uniform": torch.rand(rows, generator=g, dtype=torch.float64),
        "temperature": temperature,
        "bonus": torch.randint(0, V, (requests, 1), generator=g, dtype=torch.int32),
        "drafted": torch.rand(rows, generator=g) > 0.05,
        "rule_of_row": torch.repeat_interleave(torch.randint(0, num_rules, (requests,), generator=g), counts),
    }


def _step(rules: list, batch: dict[str, torch.Tensor], mode: str) -> dict[str, torch.Tensor]:
    """The patched rejection_sample's own part of one step (``mode``: greedy, sampled, or sampled with
    the drafter's probabilities): tokens, accepted rows, uniforms handed to vLLM, lossy accepts."""
    draft, cu = batch["draft"], batch["cu"]
    rule_of_row = batch["rule_of_row"] if len(rules) > 1 else None
    context = StepContext(
        rules, rule_of_row, batch["hidden"], batch["context_hidden"], batch["draft_logits"], batch["drafted"]
    )
    if mode == "greedy":
        tokens = context.decide_greedy(draft, batch["target_logits"], cu, K, batch["bonus"])
        assert context.lossy is not None
        return {"tokens": tokens, "lossy": context.lossy}
    row_temperature = batch["temperature"][request_of_row(cu, draft.shape[0])]
    sampled = row_temperature != GREEDY_TEMPERATURE
    processed = batch["target_logits"] / torch.where(sampled, row_temperature, 1.0).unsqueeze(1)
    draft_probs = batch["draft_probs"] if mode == "sampled, drafter probabilities" else None
    decision = context.decide_sampled(
        draft, processed, cu, row_temperature, sampled, batch["uniform"], draft_probs
    )
    tokens = greedy_verify(draft, cu, K, processed, batch["bonus"], decision.accepted, decision.choice)
    assert context.lossy is not None
    return {"tokens": tokens, "accepted": decision.accepted, "forced_uniform": decision.forced_uniform,
            "lossy": context.lossy}  # fmt: skip


MODES = ("greedy", "sampled", "sampled, drafter probabilities")


def _syncs(rules: list, batch: dict[str, torch.Tensor], mode: str) -> bool:
    """Whether the step makes a CUDA host synchronisation."""
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        _step(rules, batch, mode)
        return False
    except RuntimeError:
        return True
    finally:
        torch.cuda.set_sync_debug_mode("default")


def _differing(cpu: dict[str, torch.Tensor], device: dict[str, torch.Tensor]) -> int:
    """Rows (accepted, uniforms) and requests (tokens, lossy counts) where the device step differs."""
    total = 0
    for key, value in cpu.items():
        other = device[key].cpu()
        differs = value != other if value.dim() == 1 else (value != other).any(dim=1)
        total += int(differs.sum())
    return total


def check(name: str, names: list[str], device: torch.device, batches: int, requests: int) -> dict:
    """Compare the CPU and the device step of rules ``names`` (several: a rule per request)."""
    cpu_rules = [_rule(rule, torch.device("cpu")) for rule in names]
    device_rules = [_rule(rule, device) for rule in names]
    row = {"rule": name, "differing_rows_and_requests": 0, "rows": 0, "lossy_accepts_counted": 0}
    syncs = dict.fromkeys(MODES, False)
    for seed in range(batches):
        batch = _batch(seed, requests, len(names))
        on_device = {key: value.to(device) for key, value in batch.items()}
        for mode in MODES:
            cpu = _step(cpu_rules, batch, mode)
            row["differing_rows_and_requests"] += _differing(cpu, _step(device_rules, on_device, mode))
            row["rows"] += batch["draft"].shape[0]
            row["lossy_accepts_counted"] += int(cpu["lossy"].sum())
            syncs[mode] |= device.type == "cuda" and _syncs(device_rules, on_device, mode)
    row["steps_that_sync_host"] = [mode for mode, synced in syncs.items() if synced]
    print(row, flush=True)
    return row


def host_table_syncs(device: torch.device, requests: int) -> bool:
    """The control of the sync check: the context head with its class table left on the host (the runner
    before ``JudgeHead.to``), one greedy step."""
    head = _head("judge-context", device)
    assert head.token_class is not None
    head.token_class = head.token_class.cpu()
    batch = {key: value.to(device) for key, value in _batch(0, requests, 1).items()}
    return _syncs([build_rule(RuleConfig("judge-context"), K, head)], batch, "greedy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of this script on the CPU")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("check_core_on_cuda: no CUDA device")
    rows = [check(name, [name], device, args.batches, args.requests) for name in RULES]
    rows.append(check("every rule, one per request", list(RULES), device, args.batches, args.requests))
    result = {
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu (dry run)",
        "torch": torch.__version__,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "vocab": V,
        "window": K,
        "steps": list(MODES),
        "rules": rows,
        "all_equal": all(row["differing_rows_and_requests"] == 0 for row in rows),
        "no_step_syncs_host": not any(row["steps_that_sync_host"] for row in rows),
        "control_class_table_on_host_syncs_host": device.type == "cuda"
        and host_table_syncs(device, args.requests),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "core_on_cuda.json").write_text(json.dumps(result, indent=1) + "\n")
    if not result["all_equal"]:
        raise SystemExit("check_core_on_cuda: the CUDA step differs from the CPU step")


if __name__ == "__main__":
    main()
