"""t2t-lite: Tensor2Tensor's workflow on TensorFlow 2 and Keras 3.

Importing this package is cheap on purpose: it does not import TensorFlow.
Registered problems, models and hparams sets load on the first registry
lookup (see `t2t_lite.registry`).
"""

__version__ = "0.1.0"
