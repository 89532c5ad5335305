"""t2t-lite-avg-checkpoints: averages the last N checkpoints of a run.

    t2t-lite-avg-checkpoints --output_dir=$OUT --num_last_checkpoints=5
    t2t-lite-decoder ... --checkpoint_path=$OUT/averaged

Writes `{output_dir}/averaged/ckpt-{step}-avg{N}` (or --output_path) and a
`checkpoint` state file there, so the decoder and exporter accept the
directory or the prefix as --checkpoint_path.
"""

import os

import tensorflow as tf
from absl import flags

from t2t_lite.cli import common
from t2t_lite.decoding.checkpoints.averaging import average_checkpoints, last_checkpoints

flags.DEFINE_integer("num_last_checkpoints", 5, "How many of the newest checkpoints to average.")
flags.DEFINE_string("output_path", None, "Prefix of the averaged checkpoint.")

FLAGS = flags.FLAGS


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    output_dir = common.require_flag("output_dir")
    if FLAGS.num_last_checkpoints < 1:
        raise common.CliError("--num_last_checkpoints must be at least 1.")
    try:
        paths = last_checkpoints(output_dir, FLAGS.num_last_checkpoints)
    except (FileNotFoundError, ValueError) as error:
        raise common.CliError(str(error)) from error
    step = tf.train.load_checkpoint(paths[-1]).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE")
    output_path = FLAGS.output_path or os.path.join(
        output_dir, "averaged", f"ckpt-{int(step)}-avg{len(paths)}"
    )
    written = average_checkpoints(paths, output_path)
    print(
        f"averaged {len(paths)} checkpoints ({os.path.basename(paths[0])} .. "
        f"{os.path.basename(paths[-1])}) into {written}"
    )
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
