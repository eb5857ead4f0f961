"""A head fitted from params records the proposer its mismatches were mined with."""

import numpy as np

from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import load_head
from autojudge.heads.fitting import fitted_head


def test_a_fitted_head_records_the_proposer_it_was_mined_with(params, tmp_path):
    generator = np.random.default_rng(0)
    features = generator.normal(size=(90, 3)).astype(np.float32)
    labels = (features[:, 0] > 0.5).astype(int)
    groups = np.repeat([f"p{i}" for i in range(30)], 3)
    eagle = params.model_copy(update={"pair": params.pair.model_copy(update={"proposer": "eagle"})})
    _, head = fitted_head(eagle, features, labels, groups, FeatureSpec("target", 3, 3), (0.9,), "h")
    assert head.proposer == "eagle"
    assert load_head(head.save(tmp_path / "head.safetensors")).proposer == "eagle"
