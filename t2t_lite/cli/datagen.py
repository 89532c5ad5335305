"""t2t-lite-datagen: writes a registered problem's TFRecords into --data_dir.

    t2t-lite-datagen --problem=librispeech --data_dir=$DATA --tmp_dir=$RAW

Shards that already exist are kept (`--overwrite` regenerates them); shards
are written under temporary names and renamed when complete. Each split gets
a manifest, `{problem}-{split}-manifest.json` (shard names, record counts,
byte sizes; see t2t_lite/data/shards.py), which the trainer and decoder check
the shards against before reading them; kept shards are checked too.
`--noisy_test` also writes a speech problem's test split under each named
listening condition, as splits `test_<condition>` (t2t_lite/data/noisy_splits.py).
"""

import os

from absl import flags

from t2t_lite.cli import common
from t2t_lite.data.noisy_splits import write_noisy_splits

flags.DEFINE_bool("overwrite", False, "Regenerate shards that already exist.")
flags.DEFINE_bool(
    "noisy_test",
    False,
    "Also write a speech problem's test split under each named listening condition "
    "(noise floors, noise kinds x SNRs, reverberation) as split test_<condition>.",
)


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    problem = common.problem_from_flags()
    data_dir = os.path.expanduser(common.require_flag("data_dir"))
    tmp_dir = os.path.expanduser(common.FLAGS.tmp_dir or os.path.join(data_dir, "tmp"))
    overwrite = common.FLAGS.overwrite
    report = problem.generate_data(data_dir, tmp_dir, overwrite=overwrite)
    if common.FLAGS.noisy_test:
        # A mix's test splits are its members'.
        for member in getattr(problem, "member_problems", (problem,)):
            for split, split_report in write_noisy_splits(
                member, data_dir, overwrite=overwrite
            ).items():
                report.splits[f"{member.name} {split}" if member is not problem else split] = (
                    split_report
                )
    print(report.summary())
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
