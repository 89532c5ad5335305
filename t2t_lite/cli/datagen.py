"""t2t-lite-datagen: writes a registered problem's TFRecords into --data_dir.

    t2t-lite-datagen --problem=librispeech --data_dir=$DATA --tmp_dir=$RAW

Shards that already exist are kept (`--overwrite` regenerates them); shards
are written under temporary names and renamed when complete. Each split gets
a manifest, `{problem}-{split}-manifest.json` (shard names, record counts,
byte sizes; see t2t_lite/data/shards.py), which the trainer and decoder check
the shards against before reading them; kept shards are checked too.
"""

import os

from absl import flags

from t2t_lite.cli import common

flags.DEFINE_bool("overwrite", False, "Regenerate shards that already exist.")


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    problem = common.problem_from_flags()
    data_dir = os.path.expanduser(common.require_flag("data_dir"))
    tmp_dir = os.path.expanduser(common.FLAGS.tmp_dir or os.path.join(data_dir, "tmp"))
    report = problem.generate_data(data_dir, tmp_dir, overwrite=common.FLAGS.overwrite)
    print(report.summary())
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
