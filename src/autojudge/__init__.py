"""AutoJudge: task-specific judge decoding, from mined labels to a head served in vLLM."""

__version__ = "0.1.0"
