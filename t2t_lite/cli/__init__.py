"""The t2t-lite-* commands.

Every command module imports TensorFlow; the package imports it first,
quietly (`quiet_start`), so a command's output starts with its own lines.
"""

from t2t_lite.cli.quiet_start import quiet_tensorflow_start

quiet_tensorflow_start()
