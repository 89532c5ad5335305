"""A trained run's checkpoints: loading the model, averaging the last N."""
