"""Streaming recognition: partial transcripts while the audio arrives (U2).

    recognizer = StreamingRecognizer(model, hparams, decode_config, target_encoder,
                                     chunk_frames=16)
    for chunk in microphone_chunks:          # float32 samples, any length
        print(recognizer.accept_waveform(chunk))   # the partial transcript
    text = recognizer.finalize()             # the final transcript
    recognizer.final_words                   # its words, timed as the decoder times them
    recognizer.reset()                       # ready for the next utterance

The model is one trained with `use_dynamic_chunk` (and
`audio_causal_normalization`, so no feature reads ahead more than 70 ms).
Each call featurizes the audio so far (`transcriber.piece_features`, the
decoder's featurization) and keeps the frames more audio cannot change:
all but the last `feature_lookahead_frames` (a frame's 25 ms window reaches
up to 3 frames ahead, and the delta-deltas 4 more). The encoder emits each
chunk of `chunk_frames` output frames (40 ms each) once the front end's
inputs for it are stable (`encoder.StreamingEncoder`: 11 more frames of
look-ahead), CTC prefix beam search takes the chunk's frames and its best
prefix is the partial. `finalize` encodes the rest and finds the final
transcript as the decode hparam `stream_final` says:

- "search" (default): the joint CTC/attention beam search the decoder and
  the SavedModel run (`search.model_search`), over the streamed encoder
  output; with one chunk for the whole utterance it is today's decoding;
- "rescore": U2's second pass, the CTC prefix search's n-best rescored by
  the attention decoder (`rescoring.rescore`, with `ctc_weight` and
  `alpha`). Cheaper, but it can only pick among the CTC head's spellings,
  which a byte-level CTC head often gets wrong (docs/benchmarks.md, "Streaming").

The final's words are timed as the decoder's (`WordTimer` over the streamed
encoder output's CTC posteriors, and the word boundary head's output over
the utterance's features if the model has one), in the utterance's clock.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf
from keras import ops

from t2t_lite.data.audio_features import delta_delta_reach
from t2t_lite.data.audio_io import finite_samples
from t2t_lite.data.feature_config import FeatureConfig
from t2t_lite.data.reserved_ids import is_label
from t2t_lite.decoding.audio.transcriber import encoded_word_times, piece_features, timing_inputs
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.search.model_search import decode_cap, model_search
from t2t_lite.decoding.timing.subtitles import TimedWord
from t2t_lite.decoding.timing.word_times import WordTimer, timed_word_rows
from t2t_lite.hparam import HParams
from t2t_lite.streaming.ctc_prefix_beam_search import CtcPrefixBeamSearch
from t2t_lite.streaming.encoder import StreamingEncoder
from t2t_lite.streaming.rescoring import rescore


def feature_lookahead_frames(hparams: HParams) -> int:
    """Trailing feature frames of the audio so far that more audio can change."""
    config = FeatureConfig.from_hparams(hparams)
    window = math.ceil(config.frame_length_ms / config.frame_step_ms)
    return window + (delta_delta_reach() if config.add_delta_deltas else 0)


class StreamingRecognizer:
    """Feeds audio in chunks of any length; a partial after each, a final at the end.

    Args:
        model: a speech `Transformer` trained with `use_dynamic_chunk`, with a
            CTC head.
        hparams: its hparams (`audio_*`).
        decode_config: decode hparams (`beam_size`: the CTC prefix beams and the
            final's; `ctc_weight`, `alpha`: the final's scoring;
            `stream_final`: see above; `silence_dbfs`: audio quieter than
            this so far is not decoded; `left_chunks`: the encoder's left
            context, in chunks, 0 all).
        target_encoder: the problem's target encoder (ids -> text).
        chunk_frames: encoder frames per chunk (40 ms each).

    Raises:
        ValueError: a model that cannot stream (see `StreamingEncoder`) or
            has no CTC head.
    """

    def __init__(self, model, hparams: HParams, decode_config: DecodeConfig, target_encoder,
                 chunk_frames: int):  # fmt: skip
        if getattr(model, "ctc_projection", None) is None:
            raise ValueError(
                "streaming needs a model with a CTC head (hparam ctc_loss_weight > 0)."
            )
        self.encoder = StreamingEncoder(model, chunk_frames, decode_config.left_chunks)
        self.model = model
        self.decode_config = decode_config.for_model(model)
        self.target_encoder = target_encoder
        self.lookahead = feature_lookahead_frames(hparams)
        cap = decode_cap(hparams, self.decode_config)
        self._search_final = tf.function(
            lambda memory: model_search(
                model, {"inputs_length": tf.shape(memory)[1:2]}, self.decode_config, cap,
                encoded=(memory, tf.ones(tf.shape(memory)[:2])),
            )[0][0, 0],
            input_signature=[tf.TensorSpec([1, None, model.hidden_size], tf.float32)],
        )  # fmt: skip
        self._featurize = tf.function(
            lambda waveform, length: piece_features(waveform, length, hparams, self.decode_config),
            input_signature=[tf.TensorSpec([1, None], tf.float32), tf.TensorSpec([1], tf.int32)],
        )
        timer = WordTimer(
            target_encoder.token_surfaces(), hparams, self.decode_config.confidence_exponent
        )
        rate = FeatureConfig.from_hparams(hparams).sample_rate

        def time_final(features, memory, ids, cut):
            timing = timing_inputs(model, features, memory)
            # The frames the final search read: every one the stream emitted.
            timing["encoded_lengths"] = tf.shape(memory)[1:2]
            return encoded_word_times(timing, timer, ids[None], tf.cast(cut, tf.float32) / rate)

        self._time_final = tf.function(time_final, reduce_retracing=True)
        self.reset()

    def reset(self) -> None:
        """Forgets the utterance: the next chunk starts a new one."""
        self._samples = np.zeros(0, np.float32)
        self._state = self.encoder.initial_state()
        self._search = CtcPrefixBeamSearch(self.decode_config.beam_size)
        self._memory = []  # the encoder output so far, chunk by chunk
        self._features = None  # the last featurization: (features, leading zeros cut)
        self._last_label = -1  # the frame of the best path's last label (-1: none yet)
        self.final_words: tuple[TimedWord, ...] = ()  # set by `finalize`

    @property
    def memory(self):
        """The encoder output so far, float32 `[1, frames, hidden]`."""
        if not self._memory:
            return ops.zeros((1, 0, self.model.hidden_size))
        return ops.concatenate(self._memory, axis=1)

    @property
    def encoded_frames(self) -> int:
        """Encoder frames emitted so far (40 ms each)."""
        return self._state.frames_done

    @property
    def trailing_blank_frames(self) -> int:
        """Encoder frames after the last label of the CTC head's best path so
        far, all of them before one: what endpointing reads (the SavedModel's
        `stream_step` output of the same name)."""
        return self.encoded_frames - 1 - self._last_label

    def _advance(self, final: bool) -> None:
        waveform = self._samples[None]
        self._features = self._featurize(waveform, np.array([waveform.shape[1]], np.int32))
        features = self._features[0]
        frames = int(features["inputs_length"][0])
        inputs = features["inputs"][:, :frames]
        stable = frames if final else max(0, frames - self.lookahead)
        memory, self._state = self.encoder.advance(inputs, stable, self._state, final=final)
        if memory.shape[1]:
            before = self._state.frames_done - memory.shape[1]  # frames of earlier chunks
            self._memory.append(memory)
            log_probs = np.asarray(self.model.ctc_log_probs(memory))[0]
            self._search.advance(log_probs)
            labels = np.flatnonzero(is_label(log_probs.argmax(axis=-1)))
            if labels.size:
                self._last_label = before + int(labels[-1])

    def accept_waveform(self, chunk) -> str:
        """Takes the next samples (float32, the model's rate); returns the
        partial transcript of everything so far."""
        chunk = finite_samples(np.asarray(chunk, np.float32).reshape(-1))
        self._samples = np.concatenate([self._samples, chunk])
        self._advance(final=False)
        return self.target_encoder.decode(self._search.best())

    def finalize(self) -> str:
        """The final transcript: the rest of the audio encoded, then the
        `stream_final` pass; its words timed in `final_words`. Call `reset`
        before the next utterance."""
        self._advance(final=True)
        if not self._memory:
            return ""
        memory = ops.cast(self.memory, "float32")
        if self.decode_config.stream_final == "search":
            ids = self._search_final(memory).numpy()
        else:
            ids, _ = rescore(
                self.model, memory, self._search.nbest(), self.decode_config.ctc_weight,
                self.decode_config.alpha,
            )  # fmt: skip
        ids = np.asarray(ids, np.int32)
        if ids.size:
            features, cut = self._features
            times = self._time_final(features, memory, ids, cut)
            self.final_words = timed_word_rows(times)[0]
        return self.target_encoder.decode(ids)
