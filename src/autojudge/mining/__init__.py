"""Algorithm 1 of AutoJudge: find the important mismatches (swap a draft token in, let the target
continue, check the answer), sharded and resumable.

Imports models, engines, tasks, params and lower layers.
"""
