"""Streaming recognition: partial transcripts while the audio arrives (U2).

    recognizer = StreamingRecognizer(model, run_config, decode_config, target_encoder,
                                     chunk_frames=16)
    for chunk in microphone_chunks:          # float32 samples, any length
        print(recognizer.accept_waveform(chunk))   # the partial transcript
    text = recognizer.finalize()             # the final transcript
    recognizer.final_words                   # its words, timed as the decoder times them
    recognizer.reset()                       # ready for the next utterance

The model is one trained with `use_dynamic_chunk` (and
`audio_causal_normalization`, so no feature reads ahead more than 70 ms).
The recognizer is a loop over the SavedModel's state machine
(`graph.StreamingGraph.advance`, in process): each call featurizes only its
new audio (`featurizer.IncrementalFeaturizer`: the frames it completes, as
the decoder's featurization of the whole stream gives them), the encoder
emits each chunk of `chunk_frames` output frames (40 ms each) once the
front end's inputs for it are there (`encoder.StreamingEncoder`: 11 more
frames of look-ahead), and CTC prefix beam search takes the chunk's frames
(`ctc_prefix_beam_search`, in the state): its best prefix is the partial,
as the SavedModel's and the `.tflite`'s. Audio
quieter than the decode hparam `silence_dbfs` so far is featurized but not
encoded, as the decoder decodes nothing of it.
`finalize` encodes the rest and finds the final
transcript as the decode hparam `stream_final` says:

- "search" (default): the joint CTC/attention beam search the decoder and
  the SavedModel run (`search.model_search`), over the streamed encoder
  output; with one chunk for the whole utterance it is today's decoding;
- "rescore": U2's second pass, the CTC prefix search's n-best rescored by
  the attention decoder (`rescoring.rescore`, with `ctc_weight` and
  `alpha`). Cheaper, but it can only pick among the CTC head's spellings,
  which a byte-level CTC head often gets wrong (docs/benchmarks.md, "Streaming").

The final's words are timed as the decoder's (`WordTimer` over the streamed
encoder output's CTC posteriors, and the word boundary head's output,
computed as the frames arrived, if the model has one), in the utterance's clock.
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf

from t2t_lite.data.audio_io import finite_samples, padded_batch
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.timing.subtitles import TimedWord
from t2t_lite.decoding.timing.word_times import (
    WordTimer,
    encoder_frame_seconds,
    timed_word_rows,
)
from t2t_lite.streaming.endpoint import EndpointRules
from t2t_lite.streaming.graph import StreamingGraph
from t2t_lite.streaming.rescoring import rescore
from t2t_lite.streaming.stateful_backend import StatefulBackend


class StreamingRecognizer(StatefulBackend):
    """Feeds audio in chunks of any length; a partial after each, a final at the end.

    Args:
        model: a speech `Transformer` trained with `use_dynamic_chunk`, with a
            CTC head.
        run_config: the run's `RunConfig` (audio front end, length limits).
        decode_config: decode hparams (`beam_size`: the CTC prefix beams and the
            final's; `ctc_weight`, `alpha`: the final's scoring;
            `stream_final`: see above; `silence_dbfs`: audio quieter than
            this so far is not decoded; `left_chunks`: the encoder's left
            context, in chunks, 0 all).
        target_encoder: the problem's target encoder (ids -> text).
        chunk_frames: encoder frames per chunk (40 ms each).
        transcriber: what `transcribe` runs (a `WaveformTranscriber`): an
            ended utterance's final when the streaming loop
            (`streaming.driver`) asks for the server's kind of final.
        version: what a server reports as the model's version.

    Raises:
        ValueError: a model that cannot stream (see `StreamingEncoder`) or
            has no CTC head.
    """

    def __init__(self, model, run_config: RunConfig, decode_config: DecodeConfig, target_encoder,
                 chunk_frames: int, transcriber=None, version: int = 0):  # fmt: skip
        if getattr(model, "ctc_projection", None) is None:
            raise ValueError(
                "streaming needs a model with a CTC head (hparam ctc_loss_weight > 0)."
            )
        self.model = model
        self.decode_config = decode_config.for_model(model)
        self.target_encoder = target_encoder
        timer = WordTimer(
            target_encoder.token_surfaces(),
            run_config.features,
            self.decode_config.confidence_exponent,
        )
        self.graph = StreamingGraph(
            model, run_config, self.decode_config, chunk_frames, timer,
            target_encoder.token_surfaces(),
        )  # fmt: skip
        self.encoder, self.featurizer = self.graph.encoder, self.graph.featurizer
        # What the streaming loop reads (`streaming.driver.StreamBackend`).
        self.sample_rate = self.featurizer.config.sample_rate
        self.frame_seconds = encoder_frame_seconds(run_config.features)[0]
        self.chunk_seconds = chunk_frames * self.frame_seconds
        self.endpoint_rules = EndpointRules.of(self.decode_config)
        self.transcriber, self.version = transcriber, version
        signature = [tf.TensorSpec([1, None], tf.float32), self.graph.state_spec()]
        self._advance_graph = {
            final: tf.function(functools.partial(self.graph.advance, final=final),
                               input_signature=signature)
            for final in (False, True)
        }  # fmt: skip
        memory = tf.TensorSpec([1, None, model.hidden_size], tf.float32)
        self._search_final = tf.function(self.graph.search, input_signature=[memory])
        self._time_final = tf.function(self.graph.word_times, reduce_retracing=True)
        self.reset()

    def reset(self) -> None:
        """Forgets the utterance: the next chunk starts a new one."""
        self._state = self.graph.start()
        self._frames = tf.constant(0)  # the utterance's feature frames with speech
        self.final_words: tuple[TimedWord, ...] = ()  # set by `finalize`

    @property
    def memory(self):
        """The encoder output so far, float32 `[1, frames, hidden]`."""
        return self._state["memory"]

    @property
    def encoded_frames(self) -> int:
        """Encoder frames emitted so far (40 ms each)."""
        return int(self._state["frames_done"])

    @property
    def trailing_blank_frames(self) -> int:
        """Encoder frames after the last label of the CTC head's best path so far.

        All of them before one: what endpointing reads (the SavedModel's
        `stream_step` output of the same name).
        """
        return int(self.graph.prefix_search.trailing_blank_frames(self._state))

    def _advance(self, chunk, final: bool) -> None:
        self._state, self._frames = self._advance_graph[final](chunk[None], self._state)

    def accept_waveform(self, chunk) -> str:
        """Takes the next samples (float32, the model's rate); returns the partial transcript.

        The partial covers everything so far.
        """
        chunk = finite_samples(np.asarray(chunk, np.float32).reshape(-1))
        self._advance(chunk, final=False)
        return self.target_encoder.decode(self.graph.prefix_search.best(self._state)[0].numpy())

    def finalize(self) -> str:
        """The final transcript: the rest of the audio encoded, then the `stream_final` pass.

        Its words are timed in `final_words`. Call `reset` before the next
        utterance.
        """
        self._advance(np.zeros(0, np.float32), final=True)
        if not self.encoded_frames:
            return ""
        if self.decode_config.stream_final == "search":
            ids = self._search_final(self.memory)[0][0].numpy()
        else:
            ids, _ = rescore(
                self.model, self.memory, self.graph.prefix_search.nbest(self._state),
                self.decode_config.ctc_weight, self.decode_config.alpha,
            )  # fmt: skip
        ids = np.asarray(ids, np.int32)
        if ids.size:
            times = self._time_final(self._state, self._frames, tf.constant(ids[None]))
            self.final_words = timed_word_rows(times)[0]
        return self.target_encoder.decode(ids)

    def transcribe(self, waveforms: list[np.ndarray]) -> list:
        """Each waveform's `Decoded` by the transcriber, as one batch.

        Raises:
            ValueError: the recognizer was made without a transcriber.
        """
        if self.transcriber is None:
            raise ValueError(
                "this StreamingRecognizer has no transcriber: give it a WaveformTranscriber, "
                "or take each utterance's streamed final (finish_stream)."
            )
        return self.transcriber.transcribe(*padded_batch(waveforms))
