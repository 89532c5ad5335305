"""t2t-lite-avg-checkpoints: averages the last N checkpoints of a run.

t2t-lite-avg-checkpoints --output_dir=$OUT --num_last_checkpoints=5
"""

from t2t_lite.cli import common


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    return common.not_implemented("checkpoint averaging", "issue 6: decoding and serving")


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
