"""A recognizer a user can install, on the same test audio: PocketSphinx.

    pip install pocketsphinx     # the US-English model ships inside the wheel
    python scripts/pocketsphinx_baseline.py --problem=mini_librispeech --data_dir=$DATA \
        [--split=test] [--out=$DATA/pocketsphinx_mini_librispeech_test.txt] [--jobs=2]

Reads the split's records exactly as `t2t-lite-decoder` does (the shards
datagen wrote: the same waveforms, the same references), decodes each
waveform with PocketSphinx's default US-English acoustic model, its
bundled 3-gram LM and CMUdict, lower-cases the hypotheses (the references'
case), and prints WER / CER (jiwer, as the decoder does) with the decoder's
breakdown by speaker. Hypotheses, references and metrics are written as
the decoder writes them (`<out>`, `.targets`, `.metrics.json`). A
benchmark, not a test: it takes PocketSphinx about a third of real time per
core; `--jobs` decodes in that many processes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time

import numpy as np


def _parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", required=True, help="a registered speech problem")
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--out", help="hypotheses file (default: beside the shards)")
    parser.add_argument("--limit", type=int, default=0, help="decode only this many (0: all)")
    parser.add_argument("--jobs", type=int, default=1, help="decoding processes (one a core)")
    return parser.parse_args(argv)


def _decode_in_order(block: tuple[int, list[bytes]]) -> list[str]:
    """Lower-cased hypotheses (the references' case) of utterances, in order.

    One decoder for them all, as a single run has: PocketSphinx carries its
    cepstral mean from one utterance to the next (in record order, mostly
    the same speaker's).
    """
    from pocketsphinx import Decoder

    number, pcms = block
    decoder = Decoder(samprate=16000)
    hypotheses, start = [], time.time()
    for pcm in pcms:
        decoder.start_utt()
        decoder.process_raw(pcm, full_utt=True)
        decoder.end_utt()
        hypothesis = decoder.hyp()
        hypotheses.append(hypothesis.hypstr.lower() if hypothesis else "")
        if len(hypotheses) % 100 == 0:
            done = f"{len(hypotheses)} of {len(pcms)} decoded, {time.time() - start:.0f} s"
            print(f"process {number}: {done}", file=sys.stderr, flush=True)
    return hypotheses


def _utterances(problem, args):
    """(16-bit PCM bytes, reference, id, seconds) of the split's records, in order."""
    from t2t_lite.data.speech_features import PCM_SCALE
    from t2t_lite.data.text_encoders import ByteTextEncoder
    from t2t_lite.decoding.input_batches import record_waveform_batches

    encoder = ByteTextEncoder()
    utterances = []
    for waveforms, lengths, targets, batch_ids in record_waveform_batches(
        problem, args.data_dir, args.split, batch_size=16
    ):
        for waveform, length, target, utterance_id in zip(
            waveforms, lengths, targets, batch_ids, strict=True
        ):
            pcm = np.clip(np.round(waveform[:length] * PCM_SCALE), -32768, 32767).astype("<i2")
            reference = encoder.decode([t for t in target if t > 1])
            utterances.append((pcm.tobytes(), reference, utterance_id, length / 16000))
            if args.limit and len(utterances) >= args.limit:
                return utterances
    return utterances


def main(argv=None) -> int:
    args = _parse_args(argv)
    if args.jobs < 1:
        sys.exit(f"pocketsphinx_baseline: --jobs={args.jobs}: give 1 or more processes.")
    try:
        import pocketsphinx  # noqa: F401
    except ImportError:
        sys.exit("pocketsphinx_baseline: pip install pocketsphinx first.")
    from t2t_lite import registry
    from t2t_lite.decoding.evaluation import scoring, speaker_groups

    problem = registry.problem(args.problem)
    out = args.out or os.path.join(args.data_dir, f"pocketsphinx_{problem.name}_{args.split}.txt")
    utterances = _utterances(problem, args)
    if not utterances:
        sys.exit(f"pocketsphinx_baseline: {args.data_dir} has no {args.split} records of "
                 f"{problem.name}: run t2t-lite-datagen first.")  # fmt: skip
    pcms, references, ids, durations = (list(column) for column in zip(*utterances, strict=True))
    audio_seconds, start = sum(durations), time.time()
    # Each process takes a contiguous block, so its decoder sees the records
    # in their order as one process would. Spawned, not forked: the parent
    # has TensorFlow's threads running.
    size = -(-len(pcms) // args.jobs)
    blocks = list(enumerate(pcms[i : i + size] for i in range(0, len(pcms), size)))
    with multiprocessing.get_context("spawn").Pool(len(blocks)) as pool:
        hypotheses = [h for block in pool.map(_decode_in_order, blocks) for h in block]
    elapsed = time.time() - start
    scores = scoring.score(["wer", "cer"], hypotheses, references)
    speakers = speaker_groups.read_speakers(problem, args.data_dir, args.split)
    breakdown = speaker_groups.speaker_breakdown(hypotheses, references, ids, speakers)
    with open(out, "w") as handle:
        handle.write("\n".join(hypotheses) + "\n")
    with open(out + ".targets", "w") as handle:
        handle.write("\n".join(references) + "\n")
    metrics = {**scores, **breakdown, "examples": len(ids), "seconds": elapsed, "jobs": args.jobs,
               "real_time_factor": elapsed / max(audio_seconds, 1e-9)}  # fmt: skip
    with open(out + ".metrics.json", "w") as handle:
        json.dump(metrics, handle, indent=2, sort_keys=True)
    print(
        f"pocketsphinx {problem.name} {args.split}: WER {scores['wer']:.4f}, "
        f"CER {scores['cer']:.4f}, {len(ids)} utterances, "
        f"{audio_seconds / 60:.1f} min of audio in {elapsed / 60:.1f} min ({args.jobs} jobs)"
    )
    if breakdown:
        print(f"by speaker: {speaker_groups.summary_line(breakdown)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
