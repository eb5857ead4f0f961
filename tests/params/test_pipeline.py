"""The sections of the stages up to the heads: ``task``, ``mining``, ``features``, ``train``, ``selfjudge``."""

import pytest


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mining: {shards: [0, 2]}\n", r"mining: .*shards must be 0\.\.n-1 without gaps, got \[0, 2\]"),
        (
            "mining: {gumbel_seed: 1, engine: openai}\n",
            r"gumbel_seed \(sampling mode\) needs engine hf or vllm",
        ),
        (
            "mining: {vllm: {max_model_len: 0}}\n",
            r"mining\.vllm\.max_model_len: Input should be greater than 0",
        ),
        (
            "mining: {vllm: {in_process: true, tensor_parallel_size: 2}}\n",
            r"mining\.vllm: .*in_process needs tensor_parallel_size 1",
        ),
        ("train: {target_recall: 2}\n", r"train\.target_recall: Input should be less than or equal to 1"),
        ("selfjudge: {n_next: -1}\n", r"selfjudge\.n_next: Input should be greater than or equal to 0"),
    ],
)
def test_bad_params_name_file_and_key(rejected, text, message):
    rejected(text, message)
