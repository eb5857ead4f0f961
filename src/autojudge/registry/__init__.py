"""The MLflow registry of judge heads: logged runs, the pyfunc model, the model card and promotion gates.

Imports evaluation, bench, tracking and lower layers (the card summarises all of them).
"""
