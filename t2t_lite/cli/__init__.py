"""t2t_lite.cli."""
