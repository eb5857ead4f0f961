"""Features for the judge head: target (and draft) hidden states at mined mismatches, stored in shards.

Imports mining, models and lower layers.
"""
