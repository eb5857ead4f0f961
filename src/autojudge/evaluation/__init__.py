"""Decode and score: sweeps of settings on the reference engines or vLLM, the comparison protocol
(candidate grids chosen on validation, decided on test), cross-domain tables, threshold calibration,
the serve command of a chosen setting, paired-bootstrap statistics and report tables.

Imports every layer up to vllm_plugin; used by world, bench, registry, orchestration, cli.
"""
