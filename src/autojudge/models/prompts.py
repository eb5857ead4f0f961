"""Turning a task's prompt text into the token ids a model continues."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase


def encode_prompt(tokenizer: PreTrainedTokenizerBase, text: str, chat_template: bool = False) -> list[int]:
    """Token ids of ``text``, wrapped as a user turn when ``chat_template`` is set (instruct models)."""
    if chat_template:
        return list(
            tokenizer.apply_chat_template(
                [{"role": "user", "content": text}],
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
            )
        )
    return tokenizer.encode(text)
