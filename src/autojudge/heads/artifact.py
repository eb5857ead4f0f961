"""The judge head artifact: a logistic regression over feature groups, tied to its pair and task.

Stored as one safetensors file: tensors ``weight`` [D] and ``bias`` [1] (float32), ``token_class`` [V]
(int8, when the head reads token classes), and a JSON metadata entry with the format version, feature
spec (its groups: ``autojudge.features.spec``), threshold, pair/task ids and the tokenizer hash. Decoding engines (the reference engine and the vLLM plugin) load this file.

Torch is imported by what makes, scores or reads the tensors (:meth:`JudgeHead.probability`,
:meth:`JudgeHead.save`, :func:`load_head`), not with this module: the cards, the registry and the
out-of-fold bookkeeping name heads without the model stack.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors import SafetensorError, safe_open

from autojudge.errors import InputError, ModelPairError
from autojudge.features.spec import FeatureSpec
from autojudge.io import atomic_path

if TYPE_CHECKING:
    import torch

    from autojudge.features.groups import FeatureInputs

FORMAT_VERSION = 1
HEAD_FILE = "head.safetensors"
CONTEXT_DIR = "context"  # stage train writes the context head (train.context) into the head's folder, here


def context_head_file(head_file: Path) -> Path:
    """Where stage train writes the context head beside the AutoJudge head ``head_file``."""
    return Path(head_file).parent / CONTEXT_DIR / HEAD_FILE


@dataclass
class JudgeHead:
    """p(important | h) = sigmoid(weight · h + bias); a mismatch is accepted when p < threshold."""

    weight: torch.Tensor  # [D]
    bias: float
    threshold: float
    features: FeatureSpec
    pair: str
    task: str
    tokenizer_hash: str
    info: dict = field(default_factory=dict)  # training facts: C, AUC, data sizes
    # the speculative method whose mismatches were mined (vLLM's speculative_config method): serving the
    # head with another proposer scores another proposer's mismatches (the plugin warns)
    proposer: str = "draft_model"
    token_class: torch.Tensor | None = None  # [V] int8 class of each token id (group token_classes)

    def __post_init__(self) -> None:
        if "token_classes" in self.features.groups and self.token_class is None:
            raise InputError(
                f"judge head for pair {self.pair!r} reads token classes but holds no class table"
            )

    def to(self, device: torch.device | str) -> JudgeHead:
        """This head with its tensors on ``device``, as an engine holds it (float32 weight, the class table
        beside it): no step copies them from the host."""
        import torch

        token_class = None if self.token_class is None else self.token_class.to(device)
        return replace(
            self, weight=self.weight.to(device=device, dtype=torch.float32), token_class=token_class
        )

    def judge(self, inputs: FeatureInputs) -> torch.Tensor:
        """p(important) of each draft row, from what the verification step computed."""
        from autojudge.features.groups import feature_rows

        return self.probability(feature_rows(self.features, inputs, self.token_class))

    def probability(self, features: torch.Tensor) -> torch.Tensor:
        """p(important) for feature rows [N, D]."""
        import torch

        weight = self.weight.to(device=features.device, dtype=torch.float32)
        return torch.sigmoid(features.float() @ weight + self.bias)

    def metadata(self) -> dict:
        return {
            "format_version": FORMAT_VERSION,
            "threshold": self.threshold,
            "features": asdict(self.features),
            "pair": self.pair,
            "task": self.task,
            "tokenizer_hash": self.tokenizer_hash,
            "info": self.info,
            "proposer": self.proposer,
        }

    def save(self, path: Path) -> Path:
        """Write the head atomically; ``path`` may be a directory (the file is then head.safetensors)."""
        import torch
        from safetensors.torch import save_file

        path = Path(path)
        if path.suffix != ".safetensors":
            path = path / HEAD_FILE
        tensors = {
            "weight": self.weight.float().contiguous(),
            "bias": torch.tensor([self.bias], dtype=torch.float32),
        }
        if self.token_class is not None:
            tensors["token_class"] = self.token_class.to(torch.int8).contiguous()
        with atomic_path(path) as temporary:
            save_file(tensors, str(temporary), metadata={"autojudge": json.dumps(self.metadata())})
        return path

    def check_models(
        self, pair: str, tokenizer_hash: str, target_hidden: int, draft_hidden: int | None
    ) -> None:
        """Raise `ModelPairError` unless this head fits these models: the tokenizer, and the hidden sizes of
        the states it reads (a head on target states fits any proposer; ``draft_hidden`` None: no draft
        model, as for ngram)."""
        if tokenizer_hash != self.tokenizer_hash:
            raise ModelPairError(
                f"judge head for pair {self.pair!r} was trained with another tokenizer than pair {pair!r} uses"
            )
        read = self.features.reads
        expected = {"target": self.features.target_hidden_size, "draft": self.features.draft_hidden_size}
        given = {"target": target_hidden, "draft": draft_hidden}
        if any(expected[role] != given[role] for role in read):
            want = ", ".join(f"{role}={expected[role]}" for role in read)
            have = ", ".join(f"{role}={given[role]}" for role in read)
            raise ModelPairError(
                f"judge head for pair {self.pair!r} expects hidden sizes {want}; pair {pair!r} has {have}"
            )


def load_head(path: Path) -> JudgeHead:
    """Read a head file (or a directory holding head.safetensors); errors name the file."""
    from safetensors.torch import load_file

    path = Path(path)
    if path.is_dir():
        path = path / HEAD_FILE
    if not path.is_file():
        raise InputError(f"judge head not found: {path}")
    try:
        tensors = load_file(str(path))
        with safe_open(str(path), framework="pt") as handle:
            metadata = json.loads((handle.metadata() or {})["autojudge"])
    except (SafetensorError, KeyError, json.JSONDecodeError) as error:
        raise InputError(f"{path}: not an autojudge head ({error})") from None
    if metadata.get("format_version") != FORMAT_VERSION:
        raise InputError(f"{path}: head format {metadata.get('format_version')} is not {FORMAT_VERSION}")
    try:
        features = FeatureSpec(**metadata["features"])
    except InputError as error:
        raise InputError(f"{path}: {error}") from None
    if tensors["weight"].shape != (features.dimension,):
        raise InputError(
            f"{path}: weight has shape {tuple(tensors['weight'].shape)}, expected ({features.dimension},)"
        )
    return JudgeHead(
        weight=tensors["weight"],
        bias=float(tensors["bias"][0]),
        threshold=float(metadata["threshold"]),
        features=features,
        pair=metadata["pair"],
        task=metadata["task"],
        tokenizer_hash=metadata["tokenizer_hash"],
        info=metadata.get("info", {}),
        proposer=metadata.get("proposer", "draft_model"),
        token_class=tensors.get("token_class"),
    )
