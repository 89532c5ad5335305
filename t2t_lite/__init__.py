"""t2t-lite: Tensor2Tensor's workflow on TensorFlow 2 and Keras 3.

Importing this package is cheap on purpose: it does not import TensorFlow.
Registered problems, models and hparams sets load on the first registry
lookup (see `t2t_lite.registry`).
"""

import os

__version__ = "0.1.0"

# TensorFlow's default CPU allocator returns each large tensor to the OS when
# it is freed and page-faults it back in on the next step, so an element-wise
# op on a large activation spends most of its time in page faults (measured:
# docs/design.md, "The CPU allocator"). Its BFC allocator keeps freed memory
# pooled, and peak memory fell too. TensorFlow reads this once, at its first
# tensor, so it takes effect when t2t_lite is imported before any tensor is
# made; a value the user set wins.
ALLOCATOR_ENV = "TF_CPU_ALLOCATOR_USE_BFC"
os.environ.setdefault(ALLOCATOR_ENV, "true")
