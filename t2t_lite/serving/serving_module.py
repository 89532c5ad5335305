"""The graph a SavedModel serves: raw input -> features -> beam search -> text.

    module = ServingModule(model, problem, run_config, DecodeConfig.parse("beam_size=4"),
                           problem.feature_encoders(data_dir))
    module.serve(inputs=tf.constant(["1 0 1"]))   # {"outputs": [b"1 0 1"], "scores": [...]}
    tf.saved_model.save(module, path, signatures={"serving_default": module.signature()})

Everything between the request and the reply is TF ops, so TF Serving or
`saved_model_cli` runs the export without t2t-lite (docs/design.md, "Data flow"):

- speech: `waveform` float32 `[batch, samples]` (16 kHz, in [-1, 1], zero
  padded) and `waveform_length` int32 `[batch]` go through
  `decoding/audio/transcriber.py`'s `search_pieces`, the graph the decoder CLI
  runs in process: featurized by `speech_features.featurize_batch`, the
  input pipeline's featurization (without dither and SpecAugment);
- text: `inputs` string `[batch]` is tokenized by the problem's input
  encoder (`tf_encode`) and EOS is appended, as the problem's records have it;
- decoding is `decode.model_search`, the search the decoder CLI runs, with
  the decode hparams given at export (beam, `alpha`, `ctc_weight`, ...): the
  same hypotheses for the same inputs;
- a waveform longer than `segment_seconds` (a decode hparam; default the
  training limit, see `decoding/audio/input_limits.py`) is transcribed whole: it is split at
  pauses into pieces (`decoding/audio/long_form.py`), the pieces of the batch are
  decoded together and each recording's text is its pieces' texts joined
  with spaces; nothing is truncated;
- a waveform (or piece) with no speech (empty, shorter than one 25 ms
  frame, all zero, NaN, or quieter than the decode hparam `silence_dbfs`)
  gives "" with score 0;
- the best beam is detokenized by the target encoder (`tf_decode`):
  `outputs` string `[batch]` and `scores` float32 `[batch]` (its length
  penalized log probability; a split recording's is the sum over its
  pieces). With `return_beams=True` both are `[batch, beam_size]`, best
  first (beam k of a split recording joins beam k of its pieces).

A speech model trained with `use_dynamic_chunk` also streams:
`stream_start`, `stream_step` and `stream_final` carry the recognition's
state as plain tensors between calls (`streaming/graph.py`).

A text input longer than `max_input_tokens` ids (its EOS included) fails
the request with an InvalidArgumentError saying so, rather than being cut.
Every output has at most the static cap of tokens per piece (a hypothesis
that reached the cap without EOS is returned as it is, as T2T does).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import tensorflow as tf

from t2t_lite.data.problem import Problem
from t2t_lite.data.text_encoders import EOS_ID, TextEncoder
from t2t_lite.decoding.audio.input_limits import (
    input_tokens,
    segment_seconds,
)
from t2t_lite.decoding.audio.long_form import join_pieces
from t2t_lite.decoding.audio.transcriber import search_pieces, time_words
from t2t_lite.decoding.decode_config import DecodeConfig, has_ctc_head
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.language_model import load_language_model
from t2t_lite.decoding.search.model_search import decode_cap, model_search
from t2t_lite.decoding.search.phrase_bias import tf_phrase_features
from t2t_lite.decoding.search.pronunciation_table import load_pronunciations
from t2t_lite.decoding.timing.word_times import WordTimer, encoder_frame_seconds
from t2t_lite.streaming.graph import StreamingGraph, can_stream, streaming_functions

# Encoder frames per chunk of an export's streaming signatures, unless the
# decode hparam chunk_frames says otherwise: 640 ms.
DEFAULT_CHUNK_FRAMES = 16


@dataclasses.dataclass
class _Untracked:
    """What the traced functions need, hidden from tf.Module's tracking."""

    model: Any
    decode_config: DecodeConfig
    encoders: dict[str, TextEncoder]


class ServingModule(tf.Module):
    """A trained model plus the ops around it, as one exportable `tf.Module`.

    Only the model's variables are tracked (not the Keras objects), so the
    SavedModel loads with plain TensorFlow.

    Args:
        model: a built `Transformer` (or any model with `initial_decode_cache`,
            `decode_step`, `input_modality`, `target_vocab_size`).
        problem: the problem it was trained on (featurization, encoders).
        run_config: the run's `RunConfig` (audio front end, length limits).
        decode_config: `DecodeConfig`: beam_size, alpha,
            extra_length, max_decode_length, return_beams.
        encoders: the problem's `feature_encoders(data_dir)`.

    Example:
    >>> module = ServingModule(  # doctest: +SKIP
    ...     model, problem, run_config, DecodeConfig(), encoders)
    >>> module.serve(inputs=tf.constant(["1 0 1"]))["outputs"]  # doctest: +SKIP
    """

    def __init__(
        self,
        model,
        problem: Problem,
        run_config: RunConfig,
        decode_config: DecodeConfig,
        encoders: dict[str, TextEncoder],
    ):
        super().__init__(name="t2t_lite_serving")
        # Plain objects are not tracked: the Keras model is used while tracing
        # but not saved as an object (loading would then want Keras classes).
        decode_config = decode_config.for_model(model)
        self._parts = _Untracked(model, decode_config, encoders)
        self._modality = problem.input_modality
        self.max_decode_length = decode_cap(run_config, decode_config)
        # Tracked, so that the SavedModel holds the weights the graph reads.
        self.model_variables = [getattr(v, "value", v) for v in model.variables]
        if decode_config.lm_weight > 0:  # shallow fusion: the LM's graph and weights inside
            lm = load_language_model(decode_config.lm_dir)
            self.lm_variables = [
                v if isinstance(v, tf.Variable) else v.value for v in lm.variables
            ]  # a Keras LM's variables wrap tf.Variables; an n-gram's are tf.Variables
        if decode_config.phoneme_weight > 0:  # the lexicon the pronunciation scorer reads
            self.pronunciation_variables = list(load_pronunciations().variables)
        if self._modality == "speech":
            self.max_input_frames = run_config.max_input_frames
            self.segment_seconds = segment_seconds(run_config, decode_config)
            waveform_signature = [
                tf.TensorSpec([None, None], tf.float32, name="waveform"),
                tf.TensorSpec([None], tf.int32, name="waveform_length"),
            ]

            def search(waveform, waveform_length, phrases=None):
                return search_pieces(
                    model, waveform, waveform_length, run_config, decode_config,
                    self.max_decode_length, phrases, encoders["targets"].token_surfaces(),
                )  # fmt: skip

            # Both signatures call this one function, so the search is traced
            # once however many signatures are saved.
            self._search_pieces = tf.function(
                lambda waveform, waveform_length: search(waveform, waveform_length),
                input_signature=waveform_signature,
            )
            self.serve = tf.function(self._serve_speech, input_signature=waveform_signature)
            if has_ctc_head(model):  # word times are aligned to the CTC head
                self._word_timer = WordTimer(
                    encoders["targets"].token_surfaces(),
                    run_config.features,
                    decode_config.confidence_exponent,
                )
                self.serve_timed = tf.function(
                    self._serve_speech_timed, input_signature=waveform_signature
                )
            # Phrases are bytes for every vocabulary (`phrase_steps.py`).
            phrase_signature = [
                tf.TensorSpec([None], tf.string, name="phrases"),
                tf.TensorSpec([None], tf.float32, name="phrase_boosts"),
            ]
            self._search_biased = tf.function(
                lambda waveform, waveform_length, phrase_ids, phrase_boosts: search(
                    waveform,
                    waveform_length,
                    {"phrase_ids": phrase_ids, "phrase_boosts": phrase_boosts},
                ),
                input_signature=waveform_signature
                + [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.float32)],
            )
            self.serve_biased = tf.function(
                self._serve_speech_biased, input_signature=waveform_signature + phrase_signature
            )
            if can_stream(model):
                self.stream_chunk_frames = decode_config.chunk_frames or DEFAULT_CHUNK_FRAMES
                # What a server turns `trailing_blank_frames` into seconds by.
                self.stream_frame_seconds = encoder_frame_seconds(run_config.features)[0]
                graph = StreamingGraph(
                    model, run_config, decode_config, self.stream_chunk_frames, self._word_timer,
                    encoders["targets"].token_surfaces(),
                )  # fmt: skip
                self._streaming = streaming_functions(graph, encoders["targets"])
        else:
            self.max_input_tokens = run_config.max_input_tokens
            self.serve = tf.function(
                self._serve_text,
                input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
            )

    @property
    def decode_settings(self) -> dict:
        """The decode hparams the graph uses (an unset `ctc_weight` resolved)."""
        return self._parts.decode_config.values()

    def signature(self):
        """The concrete function to save as `serving_default`."""
        return self.serve.get_concrete_function()

    def signatures(self) -> dict:
        """Every signature to save: `serving_default`, then those the model can serve.

        For a speech model with a CTC head `transcribe_timed` (the best
        transcript's words with their start and end seconds and confidences),
        and for one trained with `use_dynamic_chunk` `stream_start`,
        `stream_step` and `stream_final` (`streaming/graph.py`).
        """
        signatures = {"serving_default": self.signature()}
        if hasattr(self, "serve_timed"):
            signatures["transcribe_timed"] = self.serve_timed.get_concrete_function()
        if hasattr(self, "serve_biased"):
            signatures["transcribe_biased"] = self.serve_biased.get_concrete_function()
        for name, function in getattr(self, "_streaming", {}).items():
            signatures[name] = function.get_concrete_function()
        return signatures

    # -- input -> model features ---------------------------------------------------

    @staticmethod
    def _paired(first, second, first_rank: int, message: str):
        """`first` and `second` checked in the graph, else the request fails with `message`.

        Checked: ranks (`first_rank`, 1) and the same first dimension.

        A loaded signature called from Python checks dtypes but not ranks;
        checking in the graph gives every client TF's own shape error.
        """
        first = tf.ensure_shape(first, [None] * first_rank)
        second = tf.ensure_shape(second, [None])
        same = tf.debugging.assert_equal(tf.shape(first)[0], tf.shape(second)[0], message=message)
        with tf.control_dependencies([same]):
            return tf.identity(first), tf.identity(second)

    def _checked_waveforms(self, waveform, waveform_length):
        return self._paired(
            waveform,
            waveform_length,
            2,
            "waveform and waveform_length must have the same batch size",
        )

    def _serve_speech(self, waveform, waveform_length):
        waveform, waveform_length = self._checked_waveforms(waveform, waveform_length)
        searched = self._search_pieces(waveform, waveform_length)
        return self._decode_rows(
            searched["ids"], searched["scores"], searched["rows"], tf.shape(waveform)[0]
        )

    def _serve_speech_timed(self, waveform, waveform_length):
        waveform, waveform_length = self._checked_waveforms(waveform, waveform_length)
        return self._best_with_times(
            self._search_pieces(waveform, waveform_length), tf.shape(waveform)[0]
        )

    def _best_with_times(self, searched: dict, num_rows) -> dict:
        """Each recording's best transcript, its score and, with a CTC head, its timed words.

        These are `transcribe_timed`'s outputs.
        """
        texts = self._parts.encoders["targets"].tf_decode(searched["ids"][:, 0])
        result = {
            "outputs": join_pieces(texts, searched["rows"], num_rows),
            "scores": tf.math.unsorted_segment_sum(
                searched["scores"][:, 0], searched["rows"], num_rows
            ),
        }
        if hasattr(self, "_word_timer"):
            result.update(time_words(searched, self._word_timer, num_rows)._asdict())
        return result

    def _serve_speech_biased(self, waveform, waveform_length, phrases, phrase_boosts):
        """`serving_default` biased towards the request's phrases.

        `transcribe_timed` with a CTC head. The bias is
        `decoding/search/phrase_bias.py`'s: each phrase earns its boost per
        matched byte, in any case.
        """
        waveform, waveform_length = self._checked_waveforms(waveform, waveform_length)
        phrases, boosts = self._paired(
            phrases, phrase_boosts, 1, "phrases and phrase_boosts must have the same length"
        )
        listed = tf_phrase_features(phrases, boosts)
        searched = self._search_biased(
            waveform, waveform_length, listed["phrase_ids"], listed["phrase_boosts"]
        )
        return self._best_with_times(searched, tf.shape(waveform)[0])

    def _serve_text(self, inputs):
        inputs = tf.ensure_shape(inputs, [None])  # see _serve_speech
        ids = self._parts.encoders["inputs"].tf_encode(inputs)
        longest = input_tokens(tf.reduce_max(tf.concat([ids.row_lengths(), [0]], axis=0)))
        fits = tf.debugging.assert_less_equal(
            tf.cast(longest, tf.int32),
            self.max_input_tokens,
            message=f"an input has more tokens than this model takes ({self.max_input_tokens} "
            "with EOS, its max_input_seq_length); split the text into shorter inputs",
        )
        eos = tf.fill([ids.nrows(), 1], EOS_ID)
        with tf.control_dependencies([fits]):
            ids = tf.concat([tf.cast(ids, tf.int32), eos], axis=1).to_tensor(0)
        model, hp = self._parts.model, self._parts.decode_config
        surfaces = self._parts.encoders["targets"].token_surfaces()
        ids, scores = model_search(
            model, {"inputs": ids}, hp, self.max_decode_length, target_surfaces=surfaces
        )
        return self._detokenize(ids, scores)

    # -- beam search -> text ---------------------------------------------------------

    def _detokenize(self, ids, scores) -> dict:
        """`outputs`/`scores` of the best beam (or of every beam) of each row."""
        target_encoder = self._parts.encoders["targets"]
        if self._parts.decode_config.return_beams:
            rows, beams = tf.shape(ids)[0], tf.shape(ids)[1]
            texts = target_encoder.tf_decode(tf.reshape(ids, [rows * beams, -1]))
            return {"outputs": tf.reshape(texts, [rows, beams]), "scores": scores}
        return {"outputs": target_encoder.tf_decode(ids[:, 0]), "scores": scores[:, 0]}

    def _decode_rows(self, ids, scores, rows, num_rows) -> dict:
        """Detokenizes the pieces, then joins each recording's texts in order."""
        pieces = self._detokenize(ids, scores)
        texts, scores = pieces["outputs"], pieces["scores"]
        if not self._parts.decode_config.return_beams:
            return {
                "outputs": join_pieces(texts, rows, num_rows),
                "scores": tf.math.unsorted_segment_sum(scores, rows, num_rows),
            }
        beams = tf.transpose(texts)  # [beam, pieces]: join beam k of every piece
        joined = tf.map_fn(
            lambda column: join_pieces(column, rows, num_rows),
            beams,
            fn_output_signature=tf.TensorSpec([None], tf.string),
        )
        return {
            "outputs": tf.transpose(joined),
            "scores": tf.math.unsorted_segment_sum(scores, rows, num_rows),
        }
