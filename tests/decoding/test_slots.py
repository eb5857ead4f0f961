"""The batch KV cache: rows of different lengths, rolled back and compacted, give each row's own logits."""

import torch

from autojudge.decoding.runner import CachedRunner
from autojudge.decoding.slots import SlotCache


def _alone(model, vocab_size, tokens):
    """Logits of the last token of ``tokens``, the sequence run alone."""
    runner = CachedRunner(model, vocab_size)
    logits, _ = runner.forward(tokens)
    return logits[-1]


def test_rows_keep_their_own_positions_through_rollback_select_extend_and_compact(tiny_random_pair):
    model, vocab = tiny_random_pair.target, tiny_random_pair.vocab_size
    rows = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14]]
    cache = SlotCache(model, vocab, len(rows))
    cache.forward(rows)
    cache.forward([[20, 21, 22], [23], [24, 25]])  # the rejected-draft case: appended, then rolled back
    cache.truncate([6, 3, 3])  # row 0 keeps 20, row 1 keeps 23, row 2 keeps nothing new
    assert cache.lengths == [6, 3, 3]
    joining = SlotCache(model, vocab, 1)
    joining.forward([[30, 31, 32, 33]])
    cache.extend(joining)
    cache.select([0, 2, 3])  # row 1 finished
    cache.compact(slack=1.0)
    assert cache.valid.shape[1] == max(cache.lengths) == 6
    _, logits = cache.forward([[40], [41, 42], [43]])
    expected = [
        [5, 6, 7, 8, 9, 20, 40],
        [12, 13, 14, 41, 42],
        [30, 31, 32, 33, 43],
    ]
    last = [0, 1, 0]
    for row, tokens in enumerate(expected):
        torch.testing.assert_close(logits[row, last[row]], _alone(model, vocab, tokens), atol=1e-4, rtol=1e-4)


def test_compact_waits_for_enough_waste(tiny_random_pair):
    cache = SlotCache(tiny_random_pair.target, tiny_random_pair.vocab_size, 2)
    cache.forward([[1, 2, 3, 4], [5, 6]])
    cache.truncate([3, 2])
    cache.compact()  # 4 slots for a longest row of 3: kept
    assert cache.valid.shape[1] == 4
    assert cache.valid.sum(dim=1).tolist() == [3, 2]
