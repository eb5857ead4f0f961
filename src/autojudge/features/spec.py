"""Which hidden states a judge head reads: the contract between a head and the engines that feed it.

Nothing beyond the standard library at import: the vLLM plugin and the verification core load heads
without the mining stack, and a stage that only reads features or a head's facts starts without torch;
:meth:`FeatureSpec.combine` imports it when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

FeatureSource = Literal["target", "draft", "both"]


@dataclass(frozen=True)
class FeatureSpec:
    """Which hidden states a judge head reads, and their sizes."""

    source: FeatureSource
    target_hidden_size: int
    draft_hidden_size: int

    @property
    def dimension(self) -> int:
        return {
            "target": self.target_hidden_size,
            "draft": self.draft_hidden_size,
            "both": self.target_hidden_size + self.draft_hidden_size,
        }[self.source]

    def combine(self, target: torch.Tensor | None, draft: torch.Tensor | None) -> torch.Tensor:
        """Feature rows from target and draft hidden states of the same positions."""
        import torch

        needed = {"target": (target,), "draft": (draft,), "both": (target, draft)}[self.source]
        if any(part is None for part in needed):
            raise ValueError(f"a head on {self.source!r} hidden states needs them computed")
        return needed[0] if len(needed) == 1 else torch.cat(needed, dim=-1)
