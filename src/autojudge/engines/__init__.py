"""Generation backends behind one interface (transformers, vLLM, an OpenAI-compatible server) and
Gumbel-max sampling with a fixed seed.

Imports errors only; used by models, mining, selfjudge and above.
"""
