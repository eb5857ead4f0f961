"""The pair and the real-checkpoint stages' sections: ``pair``, ``convert``, ``distill``, ``eagle``,
``finetune``."""

import pytest


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pair: {dtype: float8}\n", r"pair\.dtype"),
        ("convert: {smollm2: {distribution: d, file: f.gguf}}\n", r"convert\.smollm2\.out: Field required"),
        ("distill: {draft: {target: t, out: o, min_agreement: 2}}\n", r"distill\.draft\.min_agreement"),
        ("finetune: {arith: {base: b, out: o}}\n", r"finetune\.arith\.adapter: Field required"),
        ("eagle: {head: {target: t}}\n", r"eagle\.head\.out: Field required"),
        ("eagle: {head: {target: t, out: o, patience: 0}}\n", r"eagle\.head\.patience: Input should"),
        ("eagle: {head: {target: t, out: o, learning_rate: -1}}\n", r"eagle\.head\.learning_rate"),
        ("eagle: {head: {target: t, out: o, noise: -0.1}}\n", r"eagle\.head\.noise"),
        ("eagle: {head: {target: t, out: o, layers: 2}}\n", r"eagle\.head\.layers: Extra inputs"),
    ],
)
def test_bad_params_name_file_and_key(rejected, text, message):
    rejected(text, message)
