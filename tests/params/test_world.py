"""The toy world's section: ``toy``."""


def test_a_toy_model_needs_its_shape(rejected):
    rejected("toy: {target: {hidden_size: 64}}\n", r"toy\.target\.layers: Field required")
