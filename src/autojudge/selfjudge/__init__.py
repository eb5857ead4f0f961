"""SelfJudge: labels from the target's own likelihoods (semantic preservation), no answer checker needed."""
