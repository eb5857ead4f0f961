"""The embedded toy world: its tokenizer, the training corpus drawn from the task generators, training
the toy pair and measuring its quality.

Imports evaluation, decoding, models, tasks and lower layers (it trains and measures a pair).
"""
