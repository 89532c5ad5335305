"""t2t_lite.serving."""
