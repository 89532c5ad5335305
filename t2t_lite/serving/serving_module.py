"""The graph a SavedModel serves: raw input -> features -> beam search -> text.

    module = ServingModule(model, problem, hparams, decode_hparams("beam_size=4"),
                           problem.feature_encoders(data_dir))
    module.serve(inputs=tf.constant(["1 0 1"]))   # {"outputs": [b"1 0 1"], "scores": [...]}
    tf.saved_model.save(module, path, signatures={"serving_default": module.signature()})

Everything between the request and the reply is TF ops, so TF Serving or
`saved_model_cli` runs the export without t2t-lite (DESIGN.md, "Data flow" 5):

- speech: `waveform` float32 `[batch, samples]` (16 kHz, in [-1, 1], zero
  padded) and `waveform_length` int32 `[batch]` are featurized exactly as
  `speech_problem.featurize(..., training=False)` featurizes each utterance
  alone (no dither, no SpecAugment);
- text: `inputs` string `[batch]` is tokenized by the problem's input
  encoder (`tf_encode`) and EOS is appended, as the problem's records have it;
- decoding is `BatchDecoder`'s beam search with the same decode hparams and
  the same length rule: `decode_length` = input length (after the speech
  front end's 4x reduction) + `extra_length`, rounded up to 16 and capped by
  `max_decode_length` (else `max_target_seq_length`, else 256). The cap is
  static because the decode cache has a static length;
- the best beam is detokenized by the target encoder (`tf_decode`):
  `outputs` string `[batch]` and `scores` float32 `[batch]` (its length
  penalized log probability). With `return_beams=True` both are
  `[batch, beam_size]`, best first.

Over-long inputs never grow the graph's memory without bound: a waveform is
truncated to `max_input_frames` frames' worth of samples and a text input to
`max_input_tokens` ids (its EOS included) before decoding, and every output
has at most the static cap of tokens (a hypothesis that reached the cap
without EOS is returned as it is, as T2T does).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import tensorflow as tf

from t2t_lite.data import audio_features
from t2t_lite.data.problem import Problem
from t2t_lite.data.speech_problem import log_mel_features
from t2t_lite.data.text_encoders import EOS_ID, TextEncoder
from t2t_lite.decoding.beam_search import beam_search
from t2t_lite.decoding.decode import LENGTH_QUANTUM, BatchDecoder
from t2t_lite.hparam import HParams

# Limits used when the hparams set none: 30 s of audio, 256 text tokens.
DEFAULT_MAX_INPUT_FRAMES = 3000
DEFAULT_MAX_INPUT_TOKENS = 256
_FRONT_END_REDUCTION = 4  # the speech front end's two stride-2 convolutions


def max_input_frames(hparams: HParams) -> int:
    """The longest speech input the export featurizes, in frames (`audio_frame_step` each).

    The training limits, so a served utterance is never longer than any the
    model saw: `max_input_seq_length` (frames), else `max_length` (T2T's
    frames x mel bins) in frames, else `DEFAULT_MAX_INPUT_FRAMES`.
    """
    if hparams.get("max_input_seq_length", 0) > 0:
        return hparams.max_input_seq_length
    if hparams.get("max_length", 0) > 0:
        return max(1, hparams.max_length // hparams.audio_num_mel_bins)
    return DEFAULT_MAX_INPUT_FRAMES


def max_input_tokens(hparams: HParams) -> int:
    """The longest text input the export encodes, in ids including EOS."""
    for name in ("max_input_seq_length", "max_length"):
        if hparams.get(name, 0) > 0:
            return max(2, hparams.get(name))  # room for a token and EOS
    return DEFAULT_MAX_INPUT_TOKENS


def max_input_samples(hparams: HParams) -> int:
    """The waveform length (samples) that yields exactly `max_input_frames` frames."""
    step = int(hparams.audio_frame_step * hparams.audio_sample_rate / 1000)
    # Pre-emphasis drops one sample; a frame is real when it starts inside.
    extra = 1 if hparams.audio_preemphasis > 0 else 0
    return max_input_frames(hparams) * step + extra


def featurize_batch(
    waveforms: tf.Tensor, waveform_lengths: tf.Tensor, hparams: HParams
) -> tuple[tf.Tensor, tf.Tensor]:
    """Inference featurization of a zero-padded batch, row by row equal to `featurize`.

    Args:
        waveforms: float32 `[batch, samples]`.
        waveform_lengths: int `[batch]` real lengths in samples (clipped to
            `[0, samples]`).
        hparams: the `audio_*` hparams of a speech problem.

    Returns:
        `(features [batch, frames, mel_bins, channels], frame_lengths [batch])`:
        frames beyond an utterance's length are zero, and `frames` is the
        longest utterance's frame count (at least 1).

    Example:
    >>> features, lengths = featurize_batch(tf.zeros([2, 16000]), [16000, 8000], hparams)
    >>> lengths.numpy()
    array([100,  50], dtype=int32)
    """
    waveforms = tf.convert_to_tensor(waveforms, tf.float32)
    num_samples = tf.shape(waveforms)[1]
    lengths = tf.clip_by_value(tf.cast(waveform_lengths, tf.int32), 0, num_samples)
    # Zeros past the end change no real frame (they are masked out) and make
    # sure even an empty request has a frame to run the model on.
    step = int(hparams.audio_frame_step * hparams.audio_sample_rate / 1000)
    waveforms = tf.pad(waveforms, [[0, 0], [0, step + 1]])
    features = log_mel_features(waveforms, lengths, hparams)
    frame_lengths = audio_features.num_feature_frames(
        lengths, hparams.audio_sample_rate, hparams.audio_frame_step, hparams.audio_preemphasis
    )
    frames = tf.maximum(tf.reduce_max(frame_lengths), 1)
    # Cut the batch to its longest utterance, as the input pipeline pads it,
    # so that the decode length (and the work) ignores extra client padding.
    features = features[:, :frames]
    mask = tf.sequence_mask(frame_lengths, frames)
    return audio_features.normalize_per_utterance(features, mask), frame_lengths


@dataclasses.dataclass
class _Untracked:
    """What the traced functions need, hidden from tf.Module's tracking."""

    model: Any
    hparams: HParams
    decode_hp: HParams
    encoders: dict[str, TextEncoder]


class ServingModule(tf.Module):
    """A trained model plus the ops around it, as one exportable `tf.Module`.

    Only the model's variables are tracked (not the Keras objects), so the
    SavedModel loads with plain TensorFlow.

    Args:
        model: a built `Transformer` (or any model with `initial_decode_cache`,
            `decode_step`, `input_modality`, `target_vocab_size`).
        problem: the problem it was trained on (featurization, encoders).
        hparams: the run's hparams (audio settings and length limits).
        decode_hp: `decoding.decode.decode_hparams(...)`: beam_size, alpha,
            extra_length, max_decode_length, return_beams.
        encoders: the problem's `feature_encoders(data_dir)`.

    Example:
    >>> module = ServingModule(model, problem, hparams, decode_hparams(), encoders)
    >>> module.serve(inputs=tf.constant(["1 0 1"]))["outputs"]
    """

    def __init__(
        self,
        model,
        problem: Problem,
        hparams: HParams,
        decode_hp: HParams,
        encoders: dict[str, TextEncoder],
    ):
        super().__init__(name="t2t_lite_serving")
        # Plain objects are not tracked: the Keras model is used while tracing
        # but not saved as an object (loading would then want Keras classes).
        self._parts = _Untracked(model, hparams, decode_hp, encoders)
        self._modality = problem.input_modality
        # BatchDecoder owns the cap rule; reuse it so the two never disagree.
        self.max_decode_length = BatchDecoder(model, hparams, decode_hp).cap
        # Tracked, so that the SavedModel holds the weights the graph reads.
        self.model_variables = [getattr(v, "value", v) for v in model.variables]
        if self._modality == "speech":
            self.max_input_frames = max_input_frames(hparams)
            self.max_input_samples = max_input_samples(hparams)
            self.serve = tf.function(
                self._serve_speech,
                input_signature=[
                    tf.TensorSpec([None, None], tf.float32, name="waveform"),
                    tf.TensorSpec([None], tf.int32, name="waveform_length"),
                ],
            )
        else:
            self.max_input_tokens = max_input_tokens(hparams)
            self.serve = tf.function(
                self._serve_text,
                input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
            )

    def signature(self):
        """The concrete function to save as `serving_default`."""
        return self.serve.get_concrete_function()

    # -- input -> model features ---------------------------------------------------

    def _serve_speech(self, waveform, waveform_length):
        # A loaded signature called from Python checks dtypes but not ranks;
        # checking in the graph gives every client TF's own shape error.
        waveform = tf.ensure_shape(waveform, [None, None])
        waveform_length = tf.ensure_shape(waveform_length, [None])
        same_batch = tf.debugging.assert_equal(
            tf.shape(waveform)[0],
            tf.shape(waveform_length)[0],
            message="waveform and waveform_length must have the same batch size",
        )
        with tf.control_dependencies([same_batch]):
            # Over-long audio: keep the first max_input_frames frames' samples.
            waveform = tf.identity(waveform[:, : self.max_input_samples])
        features, frame_lengths = featurize_batch(waveform, waveform_length, self._parts.hparams)
        input_length = (tf.shape(features)[1] + _FRONT_END_REDUCTION - 1) // _FRONT_END_REDUCTION
        return self._decode({"inputs": features, "inputs_length": frame_lengths}, input_length)

    def _serve_text(self, inputs):
        inputs = tf.ensure_shape(inputs, [None])  # see _serve_speech
        ids = self._parts.encoders["inputs"].tf_encode(inputs)
        # Over-long text: keep the first tokens, then EOS (as every record ends).
        ids = ids[:, : self.max_input_tokens - 1]
        eos = tf.fill([ids.nrows(), 1], EOS_ID)
        ids = tf.concat([tf.cast(ids, tf.int32), eos], axis=1).to_tensor(0)
        return self._decode({"inputs": ids}, tf.shape(ids)[1])

    # -- beam search -> text ---------------------------------------------------------

    def _decode_length(self, input_length: tf.Tensor) -> tf.Tensor:
        """BatchDecoder.decode_length in TF ops (its input is a tensor here)."""
        wanted = input_length + self._parts.decode_hp.extra_length
        wanted = LENGTH_QUANTUM * ((wanted + LENGTH_QUANTUM - 1) // LENGTH_QUANTUM)
        return tf.clip_by_value(wanted, 1, self.max_decode_length)

    def _decode(self, features: dict, input_length: tf.Tensor) -> dict:
        model, hp = self._parts.model, self._parts.decode_hp
        target_encoder = self._parts.encoders["targets"]
        # The cache needs a static length: the cap; the search stops at the
        # per-request decode length, which the cap bounds.
        cache = model.initial_decode_cache(features, self.max_decode_length)
        batch_size = tf.shape(cache["layer_0"]["self_attention"])[0]
        ids, scores = beam_search(
            lambda ids, step, states: model.decode_step(ids[:, -1], step, states),
            tf.zeros([batch_size], tf.int32),
            beam_size=hp.beam_size,
            decode_length=self._decode_length(input_length),
            vocab_size=model.target_vocab_size,
            alpha=hp.alpha,
            states=cache,
        )
        if hp.return_beams:
            flat = tf.reshape(ids, [batch_size * hp.beam_size, -1])
            texts = tf.reshape(target_encoder.tf_decode(flat), [batch_size, hp.beam_size])
            return {"outputs": texts, "scores": scores}
        return {"outputs": target_encoder.tf_decode(ids[:, 0]), "scores": scores[:, 0]}
