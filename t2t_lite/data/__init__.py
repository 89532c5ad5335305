"""t2t_lite.data."""
