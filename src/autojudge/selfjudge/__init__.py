"""SelfJudge: labels from the target's own likelihoods (semantic preservation), no answer checker needed.

Imports mining, features, models, engines and lower layers.
"""

# the marker stages relabel and train_selfjudge write in their output directories when selfjudge.enabled
# is false
DISABLED = "disabled.json"
