"""t2t-lite-trainer: trains a registered model on a registered problem.

    t2t-lite-trainer --problem=librispeech --model=transformer \
        --hparams_set=transformer_librispeech --data_dir=$DATA --output_dir=$OUT
"""

from t2t_lite import registry
from t2t_lite.cli import common


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    common.hparams_from_flags()
    common.problem_from_flags()
    registry.model(common.FLAGS.model)
    return common.not_implemented("training", "issue 5: the tf.distribute trainer")


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
