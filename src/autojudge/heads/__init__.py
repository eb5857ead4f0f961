"""Judge heads: the logistic-regression artifact (safetensors + JSON), its training and out-of-fold heads.

Imports features and lower layers; used by rules, tracking, vllm_plugin and above.
"""
