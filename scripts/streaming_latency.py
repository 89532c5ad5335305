"""A streaming model at several chunk sizes: WER, real-time factor and latency.

    python scripts/streaming_latency.py --output_dir=t2t_stream/train \
        --data_dir=t2t_stream/data [--chunk_frames=0,16,8] [--examples=0]

For a model trained with `transformer_speech_small_streaming` on
`spoken_synth`, over a split (default test: the held-out voice):

- `full (joint search)`: the decoder's non-streaming decoding of the same
  model (`WaveformTranscriber`: joint CTC/attention beam search);
- each `--chunk_frames` value (0: the whole utterance as one chunk): the
  streaming recognizer fed chunk by chunk (`streaming.StreamingTranscriber`),
  with the real-time factor of its compute (every call, on this machine),
  per-chunk compute, the final latency after the last chunk, and the word
  emission delay: from the end of each word in the audio (the corpus's own
  word times, `spoken_synth-word_times.json`) to the first partial that
  holds the transcript up to that word, in simulated real time (see
  `streaming/simulation.py`). Words are paired with the reference where the
  final transcript agrees with it (`difflib`). The emission delay counts a
  word as shown once a partial has that many words, however spelled.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os

import numpy as np

from t2t_lite import registry
from t2t_lite.data.spoken_synth.spoken_word_times import load_word_times
from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.evaluation import scoring
from t2t_lite.decoding.input_batches import record_waveform_batches
from t2t_lite.decoding.search.model_search import decode_cap
from t2t_lite.streaming.simulation import StreamingTranscriber

WHOLE_UTTERANCE = 100_000  # chunk frames no utterance reaches: one chunk


def matched_word_ends(final: str, reference_words: list) -> dict[int, float]:
    """Final word index -> the end (s) of the reference word it agrees with."""
    hypothesis = final.split()
    reference = [word.word for word in reference_words]
    matcher = difflib.SequenceMatcher(a=reference, b=hypothesis, autojunk=False)
    ends = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            ends[block.b + k] = reference_words[block.a + k].end_s
    return ends


def percentiles(values: list[float]) -> dict:
    if not values:
        return {}
    return {f"p{p}": round(1000.0 * float(np.percentile(values, p)), 1) for p in (50, 90)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--chunk_frames", default="0,16,8")
    parser.add_argument("--examples", type=int, default=0, help="0: the whole split")
    parser.add_argument("--decode_hparams", default="beam_size=4,alpha=0.6,ctc_weight=0.3")
    parser.add_argument("--output_json", default="")
    args = parser.parse_args()

    problem = registry.problem("spoken_synth")
    run = TrainedRun.of(args.output_dir, problem, data_dir=args.data_dir)
    model, _ = run.restored_model()
    run_config = run.run_config
    encoder = problem.feature_encoders(args.data_dir)["targets"]
    decode_config = DecodeConfig.parse(args.decode_hparams)
    word_times = load_word_times(os.path.join(args.data_dir, "spoken_synth-word_times.json"))
    waves, references, ids = [], [], []
    for waveform, length, targets, utterance_ids in record_waveform_batches(
        problem, args.data_dir, args.split, 32
    ):
        for row in range(len(length)):
            waves.append(waveform[row, : length[row]])
            references.append(encoder.decode(targets[row]))
            ids.append(utterance_ids[row])
    if args.examples:
        waves, references, ids = (
            waves[: args.examples],
            references[: args.examples],
            ids[: args.examples],
        )
    metrics = scoring.decode_metrics(problem)
    rows = []

    def ms(summary: dict, prefix: str) -> dict:
        return {k[-3:]: round(v, 1) for k, v in summary.items() if k.startswith(prefix)}

    joint = WaveformTranscriber(
        model, run_config, decode_config, decode_cap(run_config, decode_config), encoder
    )
    finals = [joint(w[None], np.array([len(w)], np.int32))[0].text for w in waves]
    rows.append({"decoding": "full (joint search)", **scoring.score(metrics, finals, references)})
    print(json.dumps(rows[-1]), flush=True)

    for chunk in (int(c) for c in args.chunk_frames.split(",")):
        streaming = StreamingTranscriber(
            model, run_config, decode_config, encoder, chunk or WHOLE_UTTERANCE
        )
        finals = [streaming(w[None], np.array([len(w)]))[0].text for w in waves]
        ends = [
            (timing, matched_word_ends(timing.final, word_times[utterance]))
            for timing, utterance in zip(streaming.timings, ids, strict=True)
        ]
        delays = [d for timing, e in ends for d in timing.word_delays(e)]
        emitted = [d for timing, e in ends for d in timing.word_delays(e, exact=False)]
        summary = streaming.summary()
        rows.append({
            "decoding": f"streaming, chunk {chunk} ({summary['chunk_ms']:.0f} ms)" if chunk
            else "streaming, whole utterance",
            **scoring.score(metrics, finals, references),
            "real_time_factor": round(summary["real_time_factor"], 4),
            "chunk_compute_ms": ms(summary, "chunk_compute"),
            "final_latency_ms": ms(summary, "final_latency"),
            "word_delay_ms": percentiles(delays),
            "word_emission_delay_ms": percentiles(emitted),
            "words_timed": len(delays),
        })  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    if args.output_json:
        with open(args.output_json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
