"""t2t-lite-ngram: counts a word n-gram LM from a language-model problem's text.

    t2t-lite-datagen --problem=languagemodel_mini_librispeech_books --data_dir=$LMDATA \\
                     --tmp_dir=$RAW
    t2t-lite-ngram --problem=languagemodel_mini_librispeech_books --data_dir=$LMDATA \\
                   --output_dir=$NGRAM --ngram_order=4 --ngram_prune=2
    t2t-lite-decoder --output_dir=$ASR --decode_hparams="lm_dir=$NGRAM,lm_weight=0.5,..."

Reads the problem's train split (the text datagen wrote, held-out books and
sentences already left out), counts an interpolated Kneser-Ney n-gram of
its words (`ngram/kneser_ney.py`) and writes `ngram.npz` and `ngram.json`
into --output_dir. The decoder, exporter and server fuse it as they fuse a
trained LM: `lm_dir` names the directory. The problem's targets must spell
words in bytes; the recognizer's may be bytes or SentencePiece pieces (the
search spells each token's text in bytes: `ngram/token_spelling.py`).
"""

import os
import time
from collections.abc import Iterator

import numpy as np
import tensorflow as tf
from absl import flags

from t2t_lite.cli import common
from t2t_lite.data.problem import DataError
from t2t_lite.data.reserved_ids import EOS_ID, PAD_ID
from t2t_lite.data.text_encoders import ByteTextEncoder
from t2t_lite.ngram.kneser_ney import build_kneser_ney
from t2t_lite.ngram.sentence_words import chunked_word_stream

flags.DEFINE_integer("ngram_order", 4, "The longest n-gram counted.")
flags.DEFINE_integer(
    "ngram_prune", 2, "Keep n-grams of order 3 and up counted at least this often (1: all)."
)

FLAGS = flags.FLAGS


def read_sentences(
    paths: list[str], batch_size: int = 65536
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Each batch of records' targets without EOS or padding: `(ids, lengths)`, int64."""
    dataset = tf.data.TFRecordDataset(paths).batch(batch_size)
    dataset = dataset.map(
        lambda records: tf.io.parse_example(records, {"targets": tf.io.RaggedFeature(tf.int64)})[
            "targets"
        ]
    )
    for batch in dataset:
        kept = tf.ragged.boolean_mask(batch, tf.logical_and(batch != EOS_ID, batch != PAD_ID))
        yield kept.flat_values.numpy(), kept.row_lengths().numpy()


def main(argv: list[str]) -> int:
    if common.setup(argv):
        return 0
    problem = common.problem_from_flags()
    data_dir = os.path.expanduser(common.require_flag("data_dir"))
    output_dir = os.path.expanduser(common.require_flag("output_dir"))
    if problem.has_inputs:
        raise common.CliError(
            f"problem {problem.name} has inputs; t2t-lite-ngram counts the text of a "
            "language-model problem (languagemodel_*)."
        )
    if FLAGS.ngram_order < 2 or FLAGS.ngram_prune < 1:
        raise common.CliError("--ngram_order must be at least 2 and --ngram_prune at least 1.")
    encoder = problem.feature_encoders(data_dir)["targets"]
    if not isinstance(encoder, ByteTextEncoder):
        raise common.CliError(
            f"problem {problem.name}'s targets are {type(encoder).__name__} ids; a word n-gram "
            "needs targets that spell words byte by byte (ByteTextEncoder)."
        )
    try:
        paths = problem.require_data(data_dir, "train")
    except DataError as error:
        raise common.CliError(str(error)) from error
    started = time.time()
    space_id = encoder.encode(" ")[0]
    stream, vocabulary, sentences = chunked_word_stream(
        read_sentences(paths), space_id, FLAGS.ngram_order
    )
    if not sentences:
        raise common.CliError(f"problem {problem.name}'s train split in {data_dir} has no text.")
    tables = build_kneser_ney(stream, FLAGS.ngram_order, vocabulary, prune=FLAGS.ngram_prune)
    tables.info.update(
        problem=problem.name,
        sentences=sentences,
        space_id=space_id,
        target_vocab_size=encoder.vocab_size,
    )
    path = tables.save(output_dir)
    counts = ", ".join(f"{k}-grams {n:,}" for k, n in tables.info["ngrams"].items())
    print(
        f"counted {tables.info['tokens'] - tables.info['sentences']:,} words of "
        f"{tables.info['sentences']:,} sentences "
        f"({tables.info['words']:,} distinct; {counts}) in {time.time() - started:.0f} s "
        f"into {path}"
    )
    return 0


def run() -> None:
    common.run(main)


if __name__ == "__main__":
    run()
