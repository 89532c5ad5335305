"""Registered models. Importing this package registers `transformer`."""

from t2t_lite.models import transformer  # noqa: F401
