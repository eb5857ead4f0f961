"""One model's KV cache over a batch of sequences of different lengths, for batched decoding.

Every forward pass appends one slot per input position to every row; a row's padding and the draft
tokens verification later rejects stay in the cache but are marked invalid, and no query attends to
them. A row's cached tokens are its valid slots, in slot order, so its positions (and RoPE angles)
are its own. :meth:`SlotCache.compact` drops the invalid slots when they outnumber the valid ones.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel
from transformers.cache_utils import Cache, DynamicLayer

PAD_TOKEN = 0  # any id: padded positions are never attended to and their outputs are never read


class SlotLayer(DynamicLayer):
    """A cache layer with room to grow, so appending a step does not copy the whole cache."""

    def __init__(self) -> None:
        super().__init__()
        self.used = 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
            self.keys = self.values = None
        end = self.used + key_states.shape[-2]
        if self.keys is None or end > self.keys.shape[-2]:
            self._reserve(key_states, max(end, 2 * self.used, 64))
        self.keys[:, :, self.used : end] = key_states
        self.values[:, :, self.used : end] = value_states
        self.used = end
        return self.keys[:, :, :end], self.values[:, :, :end]

    def _reserve(self, like: torch.Tensor, capacity: int) -> None:
        shape = (like.shape[0], like.shape[1], capacity, like.shape[3])
        keys, values = like.new_zeros(shape), like.new_zeros(shape)
        if self.keys is not None:
            keys[:, :, : self.used] = self.keys[:, :, : self.used]
            values[:, :, : self.used] = self.values[:, :, : self.used]
        self.keys, self.values = keys, values

    def get_seq_length(self) -> int:
        return self.used

    def set(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Replace the contents (rows and slots) with these tensors [B, heads, L, head_dim]."""
        self.keys, self.values, self.used = keys.contiguous(), values.contiguous(), keys.shape[-2]


class SlotCache:
    """The KV cache of one model for a batch of rows, each with its own cached length."""

    def __init__(self, model: PreTrainedModel, vocab_size: int, rows: int) -> None:
        self.model = model
        self.decoder = model.base_model
        self.lm_head = model.get_output_embeddings()
        self.vocab_size = vocab_size
        self.device = next(model.parameters()).device
        self.cache = Cache(layers=[SlotLayer() for _ in range(model.config.num_hidden_layers)])
        self.valid = torch.zeros(rows, 0, dtype=torch.bool, device=self.device)  # [B, L] slot in use
        self.lengths = [0] * rows  # valid slots (cached tokens) per row

    @property
    def rows(self) -> int:
        return len(self.lengths)

    def _mask(self, counts: torch.Tensor, width: int) -> torch.Tensor:
        """[B, 1, Q, L+Q] additive mask: a query sees its row's valid slots and the new tokens up to
        itself; padding queries see themselves only (their outputs are never read)."""
        rows, old = self.valid.shape
        position = torch.arange(width, device=self.device)
        real = position.unsqueeze(0) < counts.unsqueeze(1)  # [B, Q]
        causal = position.unsqueeze(1) >= position.unsqueeze(0)  # [Q, Q]
        new = causal.unsqueeze(0) & real.unsqueeze(1) & real.unsqueeze(2)
        new |= torch.eye(width, dtype=torch.bool, device=self.device).unsqueeze(0)
        seen = self.valid.unsqueeze(1).expand(rows, width, old) & real.unsqueeze(2)
        allowed = torch.cat([seen, new], dim=2)
        dtype = self.model.dtype
        mask = torch.zeros(allowed.shape, dtype=dtype, device=self.device)
        return mask.masked_fill_(~allowed, torch.finfo(dtype).min).unsqueeze(1)

    @torch.inference_mode()
    def forward(self, tokens: list[list[int]], all_logits: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """Append each row's ``tokens`` after its cached ones. Returns last-layer states [B, Q, H] and
        logits [B, Q, V] (``all_logits`` False: [B, V], at each row's last token only)."""
        if len(tokens) != self.rows:
            raise ValueError(f"{len(tokens)} token lists for a batch of {self.rows} rows")
        counts = torch.tensor([len(t) for t in tokens], device=self.device)
        width = int(counts.max())
        input_ids = torch.full((self.rows, width), PAD_TOKEN, dtype=torch.long, device=self.device)
        for row, row_tokens in enumerate(tokens):
            input_ids[row, : len(row_tokens)] = torch.tensor(row_tokens, dtype=torch.long)
        starts = torch.tensor(self.lengths, device=self.device)
        position_ids = starts.unsqueeze(1) + torch.arange(width, device=self.device).unsqueeze(0)
        output = self.decoder(
            input_ids=input_ids,
            attention_mask=self._mask(counts, width),
            position_ids=position_ids,
            past_key_values=self.cache,
            use_cache=True,
        )
        hidden = output.last_hidden_state
        real = torch.arange(width, device=self.device).unsqueeze(0) < counts.unsqueeze(1)
        self.valid = torch.cat([self.valid, real], dim=1)
        self.lengths = [n + len(t) for n, t in zip(self.lengths, tokens, strict=True)]
        if all_logits:
            return hidden, self.lm_head(hidden)[..., : self.vocab_size]
        last = hidden[torch.arange(self.rows, device=self.device), counts - 1]
        return hidden, self.lm_head(last)[..., : self.vocab_size]

    def truncate(self, lengths: list[int]) -> None:
        """Keep the first ``lengths[b]`` cached tokens of each row b (no row grows)."""
        keep = torch.tensor(lengths, device=self.device).unsqueeze(1)
        order = torch.cumsum(self.valid.long(), dim=1) - 1  # each valid slot's position in its row
        self.valid = self.valid & (order < keep)
        self.lengths = [min(n, k) for n, k in zip(self.lengths, lengths, strict=True)]

    def select(self, rows: list[int]) -> None:
        """Keep only these rows, in this order."""
        index = torch.tensor(rows, dtype=torch.long, device=self.device)
        self.valid = self.valid[index]
        self.lengths = [self.lengths[r] for r in rows]
        for layer in self._layers():
            layer.set(layer.keys[index, :, : layer.used], layer.values[index, :, : layer.used])

    def extend(self, other: SlotCache) -> None:
        """Append the rows of ``other`` (a cache of the same model) after these."""
        width = max(self.valid.shape[1], other.valid.shape[1])
        if width:
            for layer, joining in zip(self._layers(), other._layers(), strict=True):
                like = layer if layer.used else joining
                keys = [
                    _slots(x.keys, x.used, like.keys, rows, width)
                    for x, rows in ((layer, self.rows), (joining, other.rows))
                ]
                values = [
                    _slots(x.values, x.used, like.values, rows, width)
                    for x, rows in ((layer, self.rows), (joining, other.rows))
                ]
                layer.set(torch.cat(keys), torch.cat(values))
                layer.is_initialized, layer.dtype, layer.device = True, like.dtype, like.device
        self.valid = torch.cat([_pad_slots(self.valid, width), _pad_slots(other.valid, width)])
        self.lengths = self.lengths + other.lengths

    def compact(self, slack: float = 2.0) -> None:
        """Drop invalid slots once the cache holds more than ``slack`` times the longest row."""
        width = max(self.lengths, default=0)
        if self.valid.shape[1] <= slack * width:
            return
        slots = torch.arange(self.valid.shape[1], device=self.device).expand_as(self.valid)
        # each row's valid slots in order, right-aligned in `width` columns (invalid ones first)
        order = torch.where(self.valid, slots, torch.full_like(slots, -1)).sort(dim=1).values
        index = order[:, order.shape[1] - width :].clamp(min=0)
        self.valid = torch.gather(self.valid, 1, index) & (order[:, order.shape[1] - width :] >= 0)
        for layer in self._layers():
            gather = index[:, None, :, None].expand(-1, layer.keys.shape[1], -1, layer.keys.shape[3])
            layer.set(layer.keys.gather(2, gather), layer.values.gather(2, gather))

    def _layers(self) -> list[SlotLayer]:
        return [layer for layer in self.cache.layers if isinstance(layer, SlotLayer)]


def _pad_slots(valid: torch.Tensor, width: int) -> torch.Tensor:
    """``valid`` [B, L] widened to ``width`` slots with invalid ones in front."""
    return torch.cat([valid.new_zeros(valid.shape[0], width - valid.shape[1]), valid], dim=1)


def _slots(tensor: torch.Tensor | None, used: int, like: torch.Tensor, rows: int, width: int) -> torch.Tensor:
    """A layer's keys or values [rows, heads, width, head_dim] with zero slots in front (``like`` gives the
    shape where the layer holds nothing yet)."""
    heads, head_dim = like.shape[1], like.shape[3]
    pad = like.new_zeros(rows, heads, width - used, head_dim)
    return pad if not used else torch.cat([pad, tensor[:, :, :used]], dim=2)
