"""Registered models (installed as part of t2t_lite)."""
