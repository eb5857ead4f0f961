"""Running the DVC pipeline: stage helpers, presets, the Prefect flow's parameters and the stages it drives.

Imports every library layer below the CLI.
"""
