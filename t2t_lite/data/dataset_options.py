"""tf.data options every iterated pipeline of t2t-lite shares.

tf.data's autotuning runs a thread whose loop waits between optimization
passes, the wait doubling up to 60 s, and in TF 2.21 destroying an iterator
waits for that wait to end. A pipeline read to its end therefore stalls
its reader for up to a minute: training stalled 31-47 s after its last
step in the quick start (a gdb stack showed `~RootDataset::Iterator`
joining `Model::OptimizeLoop`'s timed wait), and the decoder 15-20 s after
a split's last batch in about half of its runs (py-spy: the main thread in
`~LogicalThreadWrapper` under `record_waveform_batches`). Without the
thread, AUTOTUNE means min(16, cores) parallel calls and prefetch keeps
its own buffer tuning.
"""

from __future__ import annotations

import tensorflow as tf


def without_autotuning(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` without tf.data's autotuning thread (this module says why).

    Example:

    ```python
    records = without_autotuning(tf.data.TFRecordDataset(paths))
    for record in records:  # ends without waiting for the autotuner
        ...
    ```
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
