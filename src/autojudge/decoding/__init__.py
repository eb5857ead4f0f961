"""Reference decoding engines: greedy, speculative and batched speculative decoding with any acceptance rule.

Imports models and rules (and lower layers); used by evaluation, world, bench.
"""
