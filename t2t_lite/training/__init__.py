"""t2t_lite.training."""
