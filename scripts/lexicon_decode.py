"""Words from a recognizer's phoneme CTC head through CMUdict and a word n-gram.

    python scripts/lexicon_decode.py --output_dir=$OUT --data_dir=$DATA --lm_dir=$LM \
        --split=dev_mini_librispeech [--lm_weights=0.5,1.0] [--word_bonuses=0,2] \
        [--beam_size=64] [--limit=N] [--work_dir=$OUT/lexicon_decode] [--checkpoint_path=...]

A run trained with `phoneme_ctc_weight > 0` (the real-speech recipe) has a
phoneme CTC head on its encoder. This decodes a split's records (read as
`t2t-lite-decoder` reads them, recordings split at pauses as it splits them)
the way a hybrid recognizer does: the head's posteriors searched through
the pronunciation tree of CMUdict's words the n-gram knows
(`decoding/lexicon/lexicon_search.py`), scored with `t2t-lite-ngram`'s
word n-gram. For each `lm_weight` x `word_bonus` it prints WER and CER
(jiwer, as the decoder scores) and the per-speaker spread, and writes the
hypotheses, references and metrics as the decoder does under `--work_dir`.

The head's posteriors are computed once per split and checkpoint and kept
in `--work_dir` (`<split>.posteriors.npz`), so a sweep of weights runs the
model once. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time

import numpy as np


def _parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output_dir", required=True, help="the recognizer's run")
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--lm_dir", required=True, help="t2t-lite-ngram's output")
    parser.add_argument("--split", default="test")
    parser.add_argument("--checkpoint_path", default=None)
    parser.add_argument("--lm_weights", default="1.0")
    parser.add_argument("--word_bonuses", default="0")
    parser.add_argument("--beam_size", type=int, default=64)
    parser.add_argument("--beam_threshold", type=float, default=25.0)
    parser.add_argument("--token_threshold", type=float, default=10.0)
    parser.add_argument("--nbest", type=int, default=8, help="hypotheses kept for rescoring")
    parser.add_argument(
        "--attention_weights", default="0", help="weights of the byte decoder's log p in rescoring"
    )
    parser.add_argument("--ctc_weights", default="0", help="weights of the byte CTC head's log p")
    parser.add_argument("--limit", type=int, default=0, help="decode only this many (0: all)")
    parser.add_argument("--work_dir", default="", help="default: <output_dir>/lexicon_decode")
    return parser.parse_args(argv)


def _posteriors(args, problem, path: str):
    """(per-utterance phoneme log posteriors, references, utterance ids), cached at `path`."""
    if os.path.exists(path):
        saved = np.load(path, allow_pickle=True)
        return (
            list(saved["posteriors"]),
            list(saved["memories"]),
            list(saved["references"]),
            list(saved["ids"]),
        )
    import tensorflow as tf

    from t2t_lite.decoding.audio.transcriber import recording_pieces
    from t2t_lite.decoding.decode_config import DecodeConfig
    from t2t_lite.decoding.input_batches import record_waveform_batches

    run, model, checkpoint = _trained_model(args, problem)
    if not model.hears_phonemes_at_the_end():
        sys.exit(
            f"lexicon_decode.py: {checkpoint} has no phoneme CTC head on its last encoder layer: "
            "train with hparam phoneme_ctc_weight > 0 (the real-speech recipe's sets)."
        )
    print(f"posteriors of {args.split} from {checkpoint}", file=sys.stderr, flush=True)
    encoder = problem.feature_encoders(args.data_dir)["targets"]
    run_config, decode_config = run.run_config, DecodeConfig.parse("")

    @tf.function(reduce_retracing=True)
    def heard(waveforms, lengths):
        features, rows, _ = recording_pieces(waveforms, lengths, run_config, decode_config)
        memory, mask = model.encode(features, training=False)
        frames = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
        return model.phoneme_log_probs(memory), memory, frames, rows

    posteriors, memories, references, ids = [], [], [], []
    for waveforms, lengths, targets, utterance_ids in record_waveform_batches(
        problem, args.data_dir, args.split, batch_size=16
    ):
        log_probs, memory, frames, rows = (t.numpy() for t in heard(waveforms, lengths))
        for row in range(len(lengths)):
            pieces = np.flatnonzero(rows == row)
            posteriors.append(np.concatenate([log_probs[p, : frames[p]] for p in pieces]))
            memories.append(np.concatenate([memory[p, : frames[p]] for p in pieces]))
            references.append(encoder.decode(targets[row]))
        ids += list(utterance_ids)
        if args.limit and len(posteriors) >= args.limit:
            break
    saved = {
        "posteriors": np.array(posteriors, dtype=object),
        "memories": np.array(memories, dtype=object),
        "references": np.array(references, dtype=object),
        "ids": np.array(ids, dtype=object),
    }
    np.savez(path, **saved)
    return posteriors, memories, references, ids


def _trained_model(args, problem):
    from t2t_lite.decoding.checkpoints.trained_model import TrainedRun

    run = TrainedRun.of(
        args.output_dir, problem, data_dir=args.data_dir, checkpoint_path=args.checkpoint_path
    )
    model, checkpoint = run.restored_model()
    return run, model, checkpoint


def _rescorers(model, encoder):
    """`(attention, ctc)`: functions of (memory [frames, hidden], texts) -> log p of each text
    under the byte decoder (teacher-forced, EOS included) and the byte CTC head."""
    import tensorflow as tf

    from t2t_lite.data.reserved_ids import EOS_ID, PAD_ID

    @tf.function(reduce_retracing=True)
    def attention(memory, targets):
        rows = tf.shape(targets)[0]
        memory = tf.repeat(memory[None], rows, axis=0)
        mask = tf.ones(tf.shape(memory)[:2], memory.dtype)
        logits = model.decode(targets, memory, mask, training=False)
        log_p = tf.gather(tf.nn.log_softmax(logits), targets, batch_dims=2)
        return tf.reduce_sum(tf.where(targets != PAD_ID, log_p, 0.0), axis=1)

    @tf.function(reduce_retracing=True)
    def ctc(memory, labels, label_lengths):
        rows = tf.shape(labels)[0]
        log_probs = tf.repeat(model.ctc_log_probs(memory[None]), rows, axis=0)
        frames = tf.fill([rows], tf.shape(memory)[0])
        loss = tf.nn.ctc_loss(
            labels, log_probs, label_lengths, frames, logits_time_major=False, blank_index=PAD_ID
        )
        return -loss

    def padded(rows):
        longest = max(1, max(len(r) for r in rows))
        return np.array([r + [PAD_ID] * (longest - len(r)) for r in rows], np.int32)

    def attention_scores(memory, texts):
        targets = padded([encoder.encode(t) + [EOS_ID] for t in texts])
        return attention(tf.constant(memory, tf.float32), tf.constant(targets)).numpy()

    def ctc_scores(memory, texts):
        labels = [encoder.encode(t) for t in texts]
        lengths = np.array([len(r) for r in labels], np.int32)
        return ctc(tf.constant(memory, tf.float32), padded(labels), lengths).numpy()

    return attention_scores, ctc_scores


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",")]


def main(argv=None) -> None:
    args = _parse_args(argv)
    from t2t_lite import registry, run_dir
    from t2t_lite.data.phoneme_targets import read_lexicon
    from t2t_lite.decoding.evaluation import scoring, speaker_groups
    from t2t_lite.decoding.lexicon.lexicon_search import LexiconSearchConfig, lexicon_search
    from t2t_lite.decoding.lexicon.pronunciation_trie import PronunciationTrie, word_keys
    from t2t_lite.decoding.lexicon.word_lm import WordLm
    from t2t_lite.ngram.ngram_tables import NgramTables

    args.work_dir = args.work_dir or os.path.join(args.output_dir, "lexicon_decode")
    os.makedirs(args.work_dir, exist_ok=True)
    problem = registry.problem(run_dir.load_flags(args.output_dir)["problem"])
    cache = os.path.join(args.work_dir, f"{args.split}.posteriors.npz")
    posteriors, memories, references, ids = _posteriors(args, problem, cache)
    if args.limit:
        posteriors, memories, references, ids = (
            x[: args.limit] for x in (posteriors, memories, references, ids)
        )
    rescoring = [(a, c) for a in _floats(args.attention_weights) for c in _floats(args.ctc_weights)]
    rescorers = None
    if any(a or c for a, c in rescoring):
        _, model, _ = _trained_model(args, problem)
        rescorers = _rescorers(model, problem.feature_encoders(args.data_dir)["targets"])

    started = time.time()
    lm = WordLm(NgramTables.load(args.lm_dir))
    lexicon = read_lexicon()
    known = lm.known(word_keys(list(lexicon)))
    lexicon = {
        word: sounds for (word, sounds), ok in zip(lexicon.items(), known, strict=True) if ok
    }
    trie = PronunciationTrie.of(lexicon, lm.unigram)
    print(
        f"lexicon: {len(lexicon):,} CMUdict words the n-gram knows, {len(trie):,} nodes "
        f"({time.time() - started:.0f} s)",
        file=sys.stderr,
        flush=True,
    )
    speakers = speaker_groups.read_speakers(problem, args.data_dir, args.split)
    frames = sum(len(p) for p in posteriors)
    results = []
    for weight, bonus in itertools.product(_floats(args.lm_weights), _floats(args.word_bonuses)):
        config = LexiconSearchConfig(
            beam_size=args.beam_size,
            beam_threshold=args.beam_threshold,
            token_threshold=args.token_threshold,
            lm_weight=weight,
            word_bonus=bonus,
        )
        started = time.time()
        nbest = [lexicon_search(p, trie, lm, config, num_best=args.nbest) for p in posteriors]
        seconds = time.time() - started
        extra = [None] * len(nbest)
        if rescorers is not None:
            extra = [
                tuple(score(m, [h.text for h in hyps]) for score in rescorers)
                for m, hyps in zip(memories, nbest, strict=True)
            ]
        for att_weight, ctc_weight in rescoring:
            hypotheses = []
            for hyps, scores in zip(nbest, extra, strict=True):
                total = np.array([h.score for h in hyps])
                if scores is not None:
                    total = total + att_weight * scores[0] + ctc_weight * scores[1]
                hypotheses.append(hyps[int(np.argmax(total))].text)
            name = f"{args.split}_lm{weight:g}_bonus{bonus:g}_att{att_weight:g}_ctc{ctc_weight:g}"
            run = {
                "lm_weight": weight,
                "word_bonus": bonus,
                "attention_weight": att_weight,
                "ctc_weight": ctc_weight,
                **scoring.score(["wer", "cer"], hypotheses, references),
                "seconds": seconds,
            }
            breakdown = speaker_groups.speaker_breakdown(hypotheses, references, ids, speakers)
            target = os.path.join(args.work_dir, name + ".txt")
            with open(target, "w") as handle:
                handle.write("\n".join(hypotheses) + "\n")
            with open(target + ".targets", "w") as handle:
                handle.write("\n".join(references) + "\n")
            with open(target + ".metrics.json", "w") as handle:
                json.dump({**run, **breakdown, "utterances": len(hypotheses)}, handle, indent=2)
            results.append(run)
            spread = speaker_groups.summary_line(breakdown) if breakdown else ""
            print(
                f"{name}: WER {run['wer']:.2%} CER {run['cer']:.2%} (search {seconds:.0f} s, "
                f"{seconds / max(frames, 1) * 1e3:.2f} ms a frame) {spread}",
                flush=True,
            )
    best = min(results, key=lambda r: r["wer"])
    print("best: " + ", ".join(f"{k}={v:g}" for k, v in best.items() if k != "seconds"))


if __name__ == "__main__":
    main()
