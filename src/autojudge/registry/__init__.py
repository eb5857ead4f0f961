"""MLflow tracking and model registry for judge heads."""
