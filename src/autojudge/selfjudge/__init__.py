"""SelfJudge: labels from the target's own likelihoods (semantic preservation), no answer checker needed.

Imports mining, features, models, engines and lower layers.
"""
