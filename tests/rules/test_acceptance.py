import torch

from autojudge.rules.acceptance import ExactMatch, TopK, Window
from autojudge.rules.verification import accepted_count


def _window(draft_tokens, target_logits):
    logits = torch.tensor(target_logits, dtype=torch.float32)
    return Window(
        draft_tokens=torch.tensor(draft_tokens),
        target_logits=logits,
        draft_logits=torch.zeros_like(logits),
        target_hidden=torch.zeros(len(draft_tokens), 2),
    )


# target prefers token 0, then 1, then 2, then 3 at every position
LOGITS = [[4.0, 3.0, 2.0, 1.0]] * 4


def test_exact_accepts_the_matching_prefix_only():
    assert accepted_count(ExactMatch(), _window([0, 0, 0, 0], LOGITS)) == (4, 0)
    assert accepted_count(ExactMatch(), _window([0, 1, 0, 0], LOGITS)) == (1, 0)
    assert accepted_count(ExactMatch(), _window([2, 0, 0, 0], LOGITS)) == (0, 0)


def test_topk_accepts_mismatches_within_the_targets_top_k():
    assert accepted_count(TopK(2), _window([0, 1, 0, 2], LOGITS)) == (3, 1)
    assert accepted_count(TopK(3), _window([0, 1, 0, 2], LOGITS)) == (4, 2)
    assert accepted_count(TopK(1), _window([0, 1, 0, 2], LOGITS)) == accepted_count(
        ExactMatch(), _window([0, 1, 0, 2], LOGITS)
    )


def test_topk_with_k_above_vocabulary_accepts_everything():
    assert accepted_count(TopK(100), _window([3, 3, 3, 3], LOGITS)) == (4, 4)
