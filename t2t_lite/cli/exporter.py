"""t2t-lite-exporter: writes a SavedModel that TF Serving runs.

t2t-lite-exporter --output_dir=$OUT --export_dir=$EXPORT
"""

from t2t_lite.cli import common


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    return common.not_implemented("export", "issue 6: decoding and serving")


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
