"""Byte-level BPE tokenizer for the toy world, with every digit its own token."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from autojudge.io import atomic_path

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"


def train_toy_tokenizer(texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on ``texts``; digits are split into single tokens."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            # " 23" -> " 2", "3": one digit per token, a leading space kept with the first digit
            pre_tokenizers.Split(Regex(r" ?[0-9]"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    # like Llama's tokenizers: encoding with special tokens prepends BOS
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", special_tokens=[(BOS, tokenizer.token_to_id(BOS))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=BOS, eos_token=EOS, pad_token=PAD, model_max_length=512
    )


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, directory: Path) -> None:
    with atomic_path(directory) as temporary:
        tokenizer.save_pretrained(temporary)
