"""The plugin's verification step on a CUDA device, against the same step on the CPU.

vLLM is not installed where a GPU is lent to this project, so this runs what the plugin's patched
``rejection_sample`` runs on the engine's device besides vLLM's own kernels (``vllm_plugin/patches.py``):
the rules' decisions, ``standard_test``, ``lossy_allowed``, ``accepted_rows``, ``greedy_verify``,
``lossy_per_request`` (the counters' per-request lossy accepts), ``request_of_row`` and
``tempered_draft_logits``, with the judge head moved to the device as ``vllm_plugin/runner.py`` moves it.
For every registered rule and random batches mixing greedy and sampled requests it checks that the CUDA
step accepts the same rows, emits the same greedy tokens and counts the same lossy accepts as the CPU
step, and records whether the greedy step synchronises with the host (``torch.cuda.set_sync_debug_mode``).
The rules' keys are the one-core property test's (``tests/rule_settings.py``).

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

from autojudge.features.spec import FeatureSpec  # noqa: E402
from autojudge.heads.artifact import JudgeHead  # noqa: E402
from autojudge.rules.acceptance import Window  # noqa: E402
from autojudge.rules.build import build_rule  # noqa: E402
from autojudge.rules.config import RULES, RuleConfig  # noqa: E402
from autojudge.rules.verification import (  # noqa: E402
    accepted_rows,
    greedy_verify,
    lossy_allowed,
    lossy_per_request,
    request_of_row,
    standard_test,
    tempered_draft_logits,
)

V, H, K = 4096, 64, 8


def _rule(name: str, device: torch.device):
    weight = torch.randn(H, generator=torch.Generator().manual_seed(7))
    head = JudgeHead(weight, 0.0, 0.5, FeatureSpec("target", H, 0), "pair", "task", "hash")
    head.weight = head.weight.to(device=device, dtype=torch.float32)  # as the runner moves it
    return build_rule(RuleConfig(name, **HALFWAY_KEYS.get(name.removesuffix("-published"), {})), K, head)


def _batch(seed: int, requests: int) -> dict[str, torch.Tensor]:
    """Flat rows of ``requests`` requests (a third greedy): logits, drafts among the target's top 3,
    a noisy drafter, a few forbidden drafts, uniforms, and each row's temperature."""
    g = torch.Generator().manual_seed(seed)
    counts = torch.randint(1, K + 1, (requests,), generator=g)
    rows = int(counts.sum())
    temperature = torch.where(torch.arange(requests) % 3 == 1, 0.0, 0.7 + torch.rand(requests, generator=g))
    target = 2.5 * torch.randn(rows, V, generator=g)
    choice = torch.randint(0, 3, (rows,), generator=g)
    draft = target.topk(3, dim=-1).indices.gather(1, choice.unsqueeze(1)).squeeze(1)
    forbidden = torch.rand(rows, generator=g) < 0.05
    target[forbidden, draft[forbidden]] = float("-inf")
    return {
        "draft": draft.to(torch.int32),
        "target_logits": target,
        "draft_logits": target + torch.randn(rows, V, generator=g),
        "hidden": torch.randn(rows, H, generator=g),
        "cu": counts.cumsum(0).to(torch.int32),
        "uniform": torch.rand(rows, generator=g, dtype=torch.float64),
        "temperature": temperature,
        "bonus": torch.randint(0, V, (requests, 1), generator=g, dtype=torch.int32),
        "drafted": torch.rand(rows, generator=g) > 0.05,
    }


def _step(rule, batch: dict[str, torch.Tensor], greedy_only: bool) -> tuple[torch.Tensor, ...]:
    """The patched rejection_sample's own part of one step: accepted rows, greedy tokens and each
    request's lossy accepts (what the plugin's counters add up)."""
    draft, target_logits, cu = batch["draft"], batch["target_logits"], batch["cu"]
    max_spec_len = K
    if greedy_only:
        window = Window(draft, target_logits, batch["draft_logits"], batch["hidden"], cu_num_draft_tokens=cu)
        accepted = accepted_rows([rule], None, window, lossy_allowed(window, batch["drafted"]))
    else:
        row_temperature = batch["temperature"][request_of_row(cu, draft.shape[0])]
        sampled = row_temperature != 0.0
        scale = torch.where(sampled, row_temperature, torch.ones_like(row_temperature)).unsqueeze(1)
        processed = target_logits / scale
        probs = processed.softmax(dim=-1, dtype=torch.float32)
        native, target_prob = standard_test(draft, probs, batch["uniform"])
        native = torch.where(sampled, native, draft.long() == processed.argmax(dim=-1))
        window = Window(
            draft, processed, tempered_draft_logits(batch["draft_logits"], scale.squeeze(1)), batch["hidden"],
            cu_num_draft_tokens=cu, native=native, sampled=sampled,
        )  # fmt: skip
        accepted = accepted_rows([rule], None, window, lossy_allowed(window, batch["drafted"], target_prob))
        target_logits = processed
    out = greedy_verify(draft, cu, max_spec_len, target_logits, batch["bonus"], accepted)
    return accepted, out, lossy_per_request(draft, cu, accepted, window.natively_accepted)


def _syncs(rule, batch: dict[str, torch.Tensor]) -> bool:
    """Whether the greedy step makes a CUDA host synchronisation."""
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        _step(rule, batch, greedy_only=True)
        return False
    except RuntimeError:
        return True
    finally:
        torch.cuda.set_sync_debug_mode("default")


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
    rows = []
    for name in RULES:
        cpu_rule, cuda_rule = _rule(name, torch.device("cpu")), _rule(name, device)
        differing, lossy, counted, rows_seen, syncs = 0, 0, 0, 0, False
        for seed in range(args.batches):
            batch = _batch(seed, args.requests)
            on_cuda = {key: value.to(device) for key, value in batch.items()}
            for greedy_only in (True, False):
                accepted, out, counts = _step(cpu_rule, batch, greedy_only)
                accepted_cuda, out_cuda, counts_cuda = _step(cuda_rule, on_cuda, greedy_only)
                differing += int((accepted != accepted_cuda.cpu()).sum())
                differing += int((out != out_cuda.cpu()).any(dim=1).sum())
                differing += int((counts != counts_cuda.cpu()).sum())
                counted += int(counts.sum())
                rows_seen += accepted.numel()
                lossy += int((accepted & (batch["draft"].long() != batch["target_logits"].argmax(-1))).sum())
            syncs |= device.type == "cuda" and _syncs(cuda_rule, on_cuda)
        rows.append({"rule": name, "differing_rows_and_requests": differing, "rows": rows_seen, "accepted_mismatches": lossy,
                     "lossy_accepts_counted": counted, "greedy_step_syncs_host": syncs})  # fmt: skip
        print(rows[-1], flush=True)
    result = {
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu (dry run)",
        "torch": torch.__version__,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "vocab": V,
        "window": K,
        "rules": rows,
        "all_equal": all(row["differing_rows_and_requests"] == 0 for row in rows),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "core_on_cuda.json").write_text(json.dumps(result, indent=1) + "\n")
    if not result["all_equal"]:
        raise SystemExit("check_core_on_cuda: the CUDA step differs from the CPU step")


if __name__ == "__main__":
    main()
