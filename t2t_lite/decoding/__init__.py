"""t2t_lite.decoding."""
