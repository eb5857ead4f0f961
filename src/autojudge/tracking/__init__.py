"""Where MLflow keeps runs and models, and judge heads fetched from it by URI (``models:/name@alias``).

Imports heads and lower layers; used by the vLLM plugin and the registry.
"""
