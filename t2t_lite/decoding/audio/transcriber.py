"""Speech transcription from waveforms: the graph the SavedModel serves, in process.

`search_pieces` is the whole speech path between a request's waveforms
and the search's ids: long recordings split at pauses
(`long_form.split_recordings`), the pieces featurized by the input
pipeline's `speech_features.featurize_batch`, pieces with no speech given
frame length 0 (they decode to ""), then `decode.model_search`. The exported
SavedModel traces it; `WaveformTranscriber` runs it in process for
`t2t-lite-decoder` and scripts, so both give the same transcripts.

Example:
```python
decode_config = DecodeConfig.parse("beam_size=4")
transcriber = WaveformTranscriber(
    model, run_config, decode_config, decode_cap(run_config, decode_config), target_encoder
)
for beams, scores in transcriber(waveforms, lengths):  # one per recording
    print(beams[0], scores[0])  # its best transcript and that one's score
```
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from t2t_lite.data import audio_features
from t2t_lite.data.speech_features import featurize_batch, trim_edges
from t2t_lite.decoding.audio.input_limits import segment_seconds
from t2t_lite.decoding.audio.long_form import piece_starts, split_recordings
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig, has_ctc_head
from t2t_lite.decoding.result import Decoded
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.model_search import decode_cap, model_search
from t2t_lite.decoding.timing.word_times import WordTimer, join_word_times, timed_word_rows

NEEDS_CTC_HEAD = (
    "word timestamps need a model trained with a CTC head (train with hparam ctc_loss_weight > 0)."
)


def recording_pieces(waveforms, lengths, run_config: RunConfig, decode_config: DecodeConfig):
    """Recordings -> the features of their pieces, each piece's recording and start.

    A piece's start is where its first sample after the cut lies in its
    recording (seconds).
    """
    waveforms = audio_features.zero_non_finite(tf.convert_to_tensor(waveforms, tf.float32))
    rate = run_config.features.sample_rate
    pieces, piece_lengths, rows = split_recordings(
        waveforms, lengths, rate, segment_seconds(run_config, decode_config)
    )
    starts = piece_starts(piece_lengths, rows, tf.shape(waveforms)[0])
    features, cut = piece_features(pieces, piece_lengths, run_config, decode_config)
    offsets = tf.cast(starts + cut, tf.float32) / rate
    return features, rows, offsets


def piece_features(pieces, piece_lengths, run_config: RunConfig, decode_config: DecodeConfig):
    """Waveform pieces -> model features and the leading zeros cut off each.

    The features are `featurize_batch`'s, a piece without speech given frame
    length 0 (it decodes to ""); the cut is how many leading samples of each
    were exact zeros cut off (`digital_silence`).

    The pieces' samples are finite: every caller zeroes the non-finite ones
    where the audio enters (`audio_features.zero_non_finite`), before the
    split at pauses, which measures levels.
    """
    # Each piece's edges are cut here, so the no-speech test below sees only
    # its sound.
    pieces, piece_lengths, cut = trim_edges(pieces, piece_lengths)
    config = run_config.features
    features, frame_lengths = featurize_batch(pieces, piece_lengths, config, cleaned=True)
    # No speech: a piece quieter than `silence_dbfs`, or shorter than one
    # frame's window (25 ms holds no word). Frame length 0 decodes to "".
    silent = audio_features.level_dbfs(pieces, piece_lengths) < decode_config.silence_dbfs
    silent |= piece_lengths < config.frame_length_samples
    frame_lengths = tf.where(silent, 0, frame_lengths)
    return {"inputs": features, "inputs_length": frame_lengths}, cut


def search_pieces(
    model,
    waveforms,
    lengths,
    run_config: RunConfig,
    decode_config: DecodeConfig,
    cap: int,
    phrases: dict | None = None,
    target_surfaces: list[bytes] | None = None,
):
    """Decodes recordings as one batch of pieces, keeping what word times need.

    The recordings are split into pieces (`long_form.split_recordings`), and
    the pieces featurized and decoded as one batch.

    Args:
        model: a speech `Transformer`.
        waveforms: float32 `[batch, samples]` (16 kHz, [-1, 1], zero padded);
            non-finite samples are read as 0.
        lengths: int `[batch]` real samples.
        run_config: the run's `RunConfig` (audio front end, length limits).
        decode_config: decode hparams (search, `segment_seconds`, `silence_dbfs`).
        cap: the static decode cap (`decode.decode_cap`).
        phrases: the request's phrase list (`phrase_bias.phrase_features`'
            `phrase_ids` and `phrase_boosts`), or None.
        target_surfaces: the targets' `token_surfaces()` (a word n-gram LM
            spells with them).

    Returns:
        A dict: `ids [pieces, beams, length]` and `scores [pieces, beams]`
        (`model_search`'s result for every piece), `rows [pieces]` (the
        recording each came from, pieces in order), `offsets [pieces]` (where
        each piece's first sample after the cut lies in its recording,
        seconds), and for a model with a CTC head `ctc_log_probs [pieces,
        frames, vocab]` and `encoded_lengths [pieces]` of the encoder output
        the search decoded from (the encoder runs once); for a model with a
        word boundary head, `boundary_probs [pieces, feature_frames, 2]` and
        `frame_lengths [pieces]`.
    """
    features, rows, offsets = recording_pieces(waveforms, lengths, run_config, decode_config)
    features.update(phrases or {})
    memory, memory_mask = model.encode(features, training=False)
    ids, scores = model_search(
        model, features, decode_config, cap, encoded=(memory, memory_mask),
        target_surfaces=target_surfaces,
    )  # fmt: skip
    searched = {"ids": ids, "scores": scores, "rows": rows, "offsets": offsets}
    return {**searched, **timing_inputs(model, features, memory)}


def timing_inputs(model, features: dict, memory) -> dict:
    """What word times read of an encoded batch, by the heads the model has.

    For a model with a CTC head `ctc_log_probs [batch, frames, vocab]`,
    `encoded_lengths [batch]` and `frame_lengths [batch]` (feature frames);
    with a word boundary head also `boundary_probs [batch, feature_frames, 2]`;
    else nothing.
    """
    timing = {}
    if has_ctc_head(model):
        timing["ctc_log_probs"] = model.ctc_log_probs(memory)
        timing["encoded_lengths"] = model.encoded_length(features["inputs_length"])
        timing["frame_lengths"] = features["inputs_length"]  # where the audio ends
    if getattr(model, "word_boundary_head", None) is not None:
        timing["boundary_probs"] = tf.sigmoid(model.word_boundary_logits(features, memory))
    return timing


def _transcripts(searched: dict) -> tuple:
    """`(ids, scores, rows)` of `search_pieces`' result.

    Every piece's beams and the recording each piece came from.
    """
    return searched["ids"], searched["scores"], searched["rows"]


def time_words(searched: dict, timer: WordTimer, num_rows):
    """When each word of each recording's best hypothesis was said.

    Args:
        searched: `search_pieces`' result, for a model with a CTC head.
        timer: a `WordTimer` for the model's targets.
        num_rows: how many recordings the pieces came from.

    Returns:
        A `WordTimes` with one row per recording, in the recording's clock.
    """
    piece_times = encoded_word_times(searched, timer, searched["ids"][:, 0], searched["offsets"])
    return join_word_times(piece_times, searched["rows"], num_rows)


def encoded_word_times(timing: dict, timer: WordTimer, ids, offsets=None):
    """`WordTimes` of hypotheses `ids [batch, length]` over what `timing_inputs` gave.

    `offsets [batch]` seconds are added to the times.
    """
    if "ctc_log_probs" not in timing:
        raise ValueError(NEEDS_CTC_HEAD)
    return timer(
        timing["ctc_log_probs"],
        timing["encoded_lengths"],
        ids,
        offsets,
        boundary_probs=timing.get("boundary_probs"),
        frame_lengths=timing.get("frame_lengths"),
    )


class WaveformTranscriber:
    """The SavedModel's speech path in process: `search_pieces`, traced once.

    Each recording's piece texts are joined as the graph joins them.

    Args:
        model, run_config, decode_config, cap: as for `search_pieces`.
        target_encoder: the problem's target encoder (any, graph ops or not).
        phrases: a phrase list every recording is biased towards
            (`phrase_bias.phrase_features`), or None.

    Call arguments:
        waveforms: float32 `[batch, samples]`, zero padded.
        lengths: int `[batch]` real samples.

    Returns:
        A `Decoded` per recording: the text of each beam, best first, and
        each beam's score summed over the pieces (as the SavedModel sums
        them); `timed` adds the best beam's timed words.

    Raises:
        ValueError: decode hparams the model cannot honour (see
            `DecodeConfig.for_model`).
    """

    def __init__(
        self,
        model,
        run_config: RunConfig,
        decode_config: DecodeConfig,
        cap: int,
        target_encoder,
        phrases: dict | None = None,
    ):
        self._encoder = target_encoder
        surfaces = target_encoder.token_surfaces()
        decode_config = decode_config.for_model(model)
        self.timed_words = has_ctc_head(model)  # word times need the CTC head
        signature = [tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None], tf.int32)]

        def search(waveforms, lengths):
            return search_pieces(
                model, waveforms, lengths, run_config, decode_config, cap, phrases, surfaces
            )

        self._transcribe = tf.function(
            lambda waveforms, lengths: _transcripts(search(waveforms, lengths)),
            input_signature=signature,
        )
        self._transcribe_timed = None
        if self.timed_words:
            timer = WordTimer(
                target_encoder.token_surfaces(),
                run_config.features,
                decode_config.confidence_exponent,
            )

            def search_timed(waveforms, lengths):
                searched = search(waveforms, lengths)
                times = time_words(searched, timer, tf.shape(waveforms)[0])
                return (*_transcripts(searched), times)

            self._transcribe_timed = tf.function(search_timed, input_signature=signature)

    @classmethod
    def of_run(
        cls, run: TrainedRun, decode_config: DecodeConfig
    ) -> tuple[WaveformTranscriber, str]:
        """`(transcriber, checkpoint)`: `run`'s model restored, transcribing with `decode_config`.

        It transcribes as the decoder and the SavedModel do.
        """
        model, checkpoint = run.restored_model()
        encoder = run.problem.feature_encoders(run.data_dir)["targets"]
        cap = decode_cap(run.run_config, decode_config)
        return cls(model, run.run_config, decode_config, cap, encoder), checkpoint

    def __call__(self, waveforms, lengths) -> list[Decoded]:
        ids, scores, rows = (t.numpy() for t in self._transcribe(waveforms, lengths))
        return self._beams(ids, scores, rows, len(lengths))

    def timed(self, waveforms, lengths) -> list[Decoded]:
        """As calling it, with each recording's words of its best beam timed.

        The words are timed by `word_times`; needs a model with a CTC head
        (`timed_words`).
        """
        if self._transcribe_timed is None:
            raise ValueError(NEEDS_CTC_HEAD)
        ids, scores, rows, times = self._transcribe_timed(waveforms, lengths)
        decoded = self._beams(ids.numpy(), scores.numpy(), rows.numpy(), len(lengths))
        return [
            dataclasses.replace(result, words=words)
            for result, words in zip(decoded, timed_word_rows(times), strict=True)
        ]

    def transcribe(self, waveforms, lengths) -> list[Decoded]:
        """Timed (`timed`) where the model can time words, else plain."""
        return self.timed(waveforms, lengths) if self.timed_words else self(waveforms, lengths)

    def _beams(self, ids, scores, rows, num_rows) -> list[Decoded]:
        results = []
        for row in range(num_rows):
            pieces = [p for p in range(len(rows)) if rows[p] == row]
            beams = tuple(
                " ".join(t for t in (self._encoder.decode(ids[p, k]) for p in pieces) if t)
                for k in range(ids.shape[1])
            )
            beam_scores = tuple(
                float(sum(scores[p, k] for p in pieces)) for k in range(ids.shape[1])
            )
            results.append(Decoded(beams, beam_scores))
        return results
