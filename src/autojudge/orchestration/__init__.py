"""Running the DVC pipeline from an orchestrator: the flow's parameters and the stages it drives."""
