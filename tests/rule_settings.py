"""Rule keys at which every registered rule accepts some mismatches and rejects others on random batches of
noisy drafts (drafts among the target's top 3): the settings the one-core property test and the GPU check
of the verification step (results/gpu/) share."""

HALFWAY_KEYS: dict[str, dict[str, float | int]] = {
    "topk": {"top_k": 3},
    "judge": {"threshold": 0.5},
    "selfjudge": {"threshold": 0.5},
    "fsd-js": {"threshold": 0.1},
    "fsd-kl": {"threshold": 0.3},
    "fsd-tv": {"threshold": 0.3},
    "kl-mask": {"threshold": 0.5, "confidence": 0.6},
    "target-entropy": {"threshold": 1.5},
    "draft-entropy": {"threshold": 1.5},
    "fly": {"threshold": 0.8, "fly_window_size": 2},
}
