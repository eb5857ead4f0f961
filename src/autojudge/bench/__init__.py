"""Benchmarks: the reference engines' speed, mining throughput, energy, and vLLM tokens/s against stock
vLLM speculative decoding.

May import every layer below it (evaluation, vllm_plugin, decoding, models, ...); only registry cards,
orchestration and the CLI import it.
"""
