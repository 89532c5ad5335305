"""t2t-lite-datagen: writes a registered problem's TFRecords into --data_dir.

t2t-lite-datagen --problem=librispeech --data_dir=$DATA --tmp_dir=$RAW
"""

from t2t_lite.cli import common


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    common.problem_from_flags()
    return common.not_implemented("data generation", "issue 4: problems and datagen")


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
