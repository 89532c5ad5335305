"""Does exact digital silence change what a trained speech model hears?

    python scripts/digital_silence_check.py --output_dir=t2t_quickstart/train \
        --data_dir=t2t_quickstart/data [--problem=spoken_synth] [--examples=60]

Decodes a split's first `--examples` utterances three ways, as the decoder
and the SavedModel decode audio (`WaveformTranscriber`), and prints each WER:

- one by one, as recorded;
- each with `--pad_seconds` of exact zeros before and after;
- joined `--group` at a time into recordings whose pauses are
  `--pause_seconds` of exact zeros (split at those pauses, as long
  recordings are, when they are long enough to be pauses);
- the same recordings with pauses of quiet noise instead (the control:
  what joining costs whatever the pauses are made of).

A model that reads digital silence as the pause it is gives the same WER
three times (within noise). Utterances whose transcripts change are listed.
"""

from __future__ import annotations

import argparse

import jiwer
import numpy as np

from t2t_lite import registry
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.input_batches import record_waveform_batches, waveform_batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", required=True, help="a t2t-lite-trainer run")
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--problem", default="spoken_synth")
    parser.add_argument("--split", default="test")
    parser.add_argument("--examples", type=int, default=60)
    parser.add_argument("--pad_seconds", type=float, default=0.25)
    parser.add_argument("--pause_seconds", type=float, default=0.5)
    parser.add_argument("--group", type=int, default=5)
    parser.add_argument("--decode_hparams", default="beam_size=4,alpha=0.6,batch_size=16")
    args = parser.parse_args()

    problem = registry.problem(args.problem)
    run = TrainedRun.of(args.output_dir, problem, data_dir=args.data_dir)
    decode_config = DecodeConfig.parse(args.decode_hparams)
    transcriber, _ = WaveformTranscriber.of_run(run, decode_config)
    encoder = problem.feature_encoders(args.data_dir)["targets"]
    waveforms, references = [], []
    for batch in record_waveform_batches(problem, args.data_dir, args.split, 16):
        samples, lengths, targets = batch[:3]
        for row, length in enumerate(lengths):
            waveforms.append(samples[row, :length])
            references.append(encoder.decode(targets[row]))
        if len(waveforms) >= args.examples:
            break
    waveforms, references = waveforms[: args.examples], references[: args.examples]

    def transcribe(batch: list[np.ndarray]) -> list[str]:
        texts = []
        for padded, lengths in waveform_batches(batch, decode_config.batch_size):
            texts += [result.text for result in transcriber(padded, lengths)]
        return texts

    rate = FeatureConfig.from_hparams(run.hparams).sample_rate
    pad = np.zeros(int(args.pad_seconds * rate), np.float32)
    pause = np.zeros(int(args.pause_seconds * rate), np.float32)
    alone = transcribe(waveforms)
    padded = transcribe([np.concatenate([pad, w, pad]) for w in waveforms])
    groups = range(0, len(waveforms), args.group)
    joined = transcribe(
        [
            np.concatenate([part for w in waveforms[g : g + args.group] for part in (w, pause)])
            for g in groups
        ]
    )
    joined_references = [" ".join(references[g : g + args.group]) for g in groups]
    # The control: the same recordings with pauses of quiet noise (40 dB under
    # their speech), as recorded audio has; what remains is the joining's own cost.
    rng = np.random.default_rng(0)

    def noise_pause(group: list[np.ndarray]) -> np.ndarray:
        level = np.sqrt(np.mean(np.square(np.concatenate(group)))) * 10 ** (-40 / 20)
        return (level * rng.standard_normal(len(pause))).astype(np.float32)

    noisy = transcribe(
        [
            np.concatenate(
                [
                    part
                    for w in waveforms[g : g + args.group]
                    for part in (w, noise_pause(waveforms[g : g + args.group]))
                ]
            )
            for g in groups
        ]
    )

    def wer(hypotheses, truths) -> str:
        return f"{100 * jiwer.wer(truths, hypotheses):.2f}%"

    print(f"{len(waveforms)} {args.split} utterances of {args.problem}, WER:")
    print(f"  one by one                          {wer(alone, references)}")
    print(f"  {args.pad_seconds} s of exact zeros around each   {wer(padded, references)}")
    print(
        f"  {args.group} per recording, {args.pause_seconds} s zero pauses   "
        f"{wer(joined, joined_references)}"
    )
    print(
        f"  {args.group} per recording, {args.pause_seconds} s noise pauses  "
        f"{wer(noisy, joined_references)}"
    )
    for reference, one, with_zeros in zip(references, alone, padded, strict=True):
        if one != with_zeros:
            print(f"  ref    {reference}\n  alone  {one}\n  padded {with_zeros}")


if __name__ == "__main__":
    main()
