"""t2t-lite-decoder: decodes a dataset split or a file with a trained model.

    t2t-lite-decoder --problem=librispeech --data_dir=$DATA --output_dir=$OUT \
        --decode_hparams="beam_size=4,alpha=0.6"
"""

from t2t_lite.cli import common


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    common.problem_from_flags()
    return common.not_implemented("decoding", "issue 6: decoding and serving")


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
