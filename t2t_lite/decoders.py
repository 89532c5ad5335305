"""One decoder protocol over every input kind: lines or a split in, `Decoded` out.

`decoder_for(problem)` picks the class by the problem's input modality,
the one place that asks; the decoder command then runs any of them alike:

    kind = decoder_for(problem)
    checked = kind.check_lines(problem, data_dir, run_config, lines, path)  # before the model loads
    decoder = kind(model, run, decode_config)     # run: the `TrainedRun`
    results = [r for batch in decoder.line_batches(checked) for r in decoder.decode(batch)]

- `TextDecoder`: text lines or a text split, through `BatchDecoder`'s
  search (beam, greedy).
- `SpeechDecoder`: audio files or a speech split's waveforms, as the
  SavedModel transcribes them (`WaveformTranscriber`: silence, long
  recordings split at pauses, word times with a CTC head), or streamed
  chunk by chunk (`StreamingTranscriber`) with decode hparam `chunk_frames`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from t2t_lite.data.audio_io import read_audio
from t2t_lite.data.problem import Problem
from t2t_lite.decoding.audio.transcriber import WaveformTranscriber
from t2t_lite.decoding.checkpoints.trained_model import TrainedRun
from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.input_batches import (
    encode_text_lines,
    record_text_batches,
    record_waveform_batches,
    text_batches,
    waveform_batches,
)
from t2t_lite.decoding.result import Decoded
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.decoding.search.model_search import BatchDecoder
from t2t_lite.decoding.search.phrase_bias import configured_phrases
from t2t_lite.streaming.simulation import StreamingTranscriber


@dataclasses.dataclass
class InputBatch:
    """A batch to decode: model inputs, and what each row is.

    Attributes:
        inputs: text: model features (`{"inputs": ids}`); speech: `(waveforms
            [batch, samples], lengths [batch])`.
        references: each row's reference, when decoding a split.
        sources: each row's input text, utterance id or audio path.
    """

    inputs: object
    references: list[str] | None = None
    sources: list[str] | None = None


class TextDecoder:
    """Text inputs (`input_modality` "text"): beam or greedy search."""

    writes_audio_files = False  # --output_format needs audio
    timed_words = False

    def __init__(self, model, run: TrainedRun, config: DecodeConfig):
        problem, data_dir = run.problem, run.data_dir
        encoders = problem.feature_encoders(data_dir)
        self._targets = encoders["targets"]
        self._inputs = encoders.get("inputs", self._targets)
        phrases = configured_phrases(config)
        self._search = BatchDecoder(
            model, run.run_config, config, phrases, self._targets.token_surfaces()
        )
        self.config = self._search.decode_config
        self.cap = self._search.cap
        # The problem's own API reads its hparams (T2T's `preprocess_example`).
        self._hparams, self._problem, self._data_dir = run.hparams, problem, data_dir

    @staticmethod
    def check_lines(problem, data_dir, run_config: RunConfig, lines: list[str], path: str):
        """Encodes the lines as the SavedModel checks them (vocabulary, length).

        Returns:
            Their ids, one array per non-blank line: what `line_batches` takes.

        Raises:
            InputListError: a bad line, named by its number.
        """
        encoder = problem.feature_encoders(data_dir)["inputs"]
        return encode_text_lines(encoder, lines, path, run_config.max_input_tokens)

    def line_batches(self, encoded: list[np.ndarray]) -> Iterator[InputBatch]:
        """Batches of the ids `check_lines` made (encoded once, before the model loaded)."""
        for features in text_batches(encoded, self.config.batch_size):
            yield InputBatch(features)

    def split_batches(self, split: str) -> Iterator[InputBatch]:
        """Every example in record order, in fixed-size batches: none dropped."""
        batches = record_text_batches(
            self._problem, self._data_dir, split, self._hparams, self.config.batch_size
        )
        for features in batches:
            targets = features["targets"].numpy()
            inputs = features["inputs"].numpy() if "inputs" in features else None
            yield InputBatch(
                {k: v for k, v in features.items() if k != "targets"},
                references=[self._targets.decode(row) for row in targets],
                sources=[self._inputs.decode(row) for row in inputs]
                if inputs is not None
                else [""] * len(targets),
            )

    def decode(self, batch: InputBatch) -> list[Decoded]:
        ids, scores = self._search(batch.inputs)
        return _in_context(
            [
                Decoded(
                    tuple(self._targets.decode(beam) for beam in row),
                    tuple(float(score) for score in row_scores),
                )
                for row, row_scores in zip(ids, scores, strict=True)
            ],
            batch,
        )

    def notes(self) -> str:
        return ""

    def report(self, target: str) -> dict | None:
        return None


class SpeechDecoder:
    """Speech inputs: audio files or a split's waveforms, transcribed or streamed.

    They are transcribed as the SavedModel transcribes them, or streamed
    (decode hparam `chunk_frames`).

    Raises:
        ValueError: decode hparams the model cannot honour, or streaming
            asked of a model that cannot stream.
    """

    writes_audio_files = True

    def __init__(self, model, run: TrainedRun, config: DecodeConfig):
        problem, data_dir, run_config = run.problem, run.data_dir, run.run_config
        search = BatchDecoder(model, run_config, config)  # checks the config against the model
        self.config, self.cap = search.decode_config, search.cap
        self._problem, self._data_dir = problem, data_dir
        self._targets = problem.feature_encoders(data_dir)["targets"]
        phrases = configured_phrases(config)
        if config.chunk_frames > 0:
            if phrases:
                raise ValueError(
                    "decode hparam hotwords_file is not applied to streamed decoding yet "
                    "(chunk_frames > 0); decode whole recordings to bias them."
                )
            self._transcriber = StreamingTranscriber(
                model, run_config, config, self._targets, config.chunk_frames
            )
        else:
            self._transcriber = WaveformTranscriber(
                model, run_config, config, self.cap, self._targets, phrases
            )
        self.timed_words = self._transcriber.timed_words
        self._soundless = 0

    @staticmethod
    def check_lines(problem, data_dir, run_config: RunConfig, lines: list[str], path: str):
        """The audio paths (the non-blank lines): files are read when decoded."""
        return [line for line in lines if line]

    def line_batches(self, paths: list[str]) -> Iterator[InputBatch]:
        """Each audio file of `paths` read (any rate, mono or not) before any is decoded.

        So a missing or undecodable file fails first, naming it. A file with
        no samples, or only NaN samples, decodes to "" as the SavedModel
        decodes such a request.

        Raises:
            AudioError: a file cannot be read.
        """
        waveforms = [read_audio(p, strict=False) for p in paths]
        self._soundless += sum(not np.any(waveform) for waveform in waveforms)
        for start, (batch, lengths) in zip(
            range(0, len(paths), self.config.batch_size),
            waveform_batches(waveforms, self.config.batch_size),
            strict=True,
        ):
            yield InputBatch((batch, lengths), sources=paths[start : start + len(lengths)])

    def split_batches(self, split: str) -> Iterator[InputBatch]:
        batches = record_waveform_batches(
            self._problem, self._data_dir, split, self.config.batch_size
        )
        for waveforms, lengths, targets, utterance_ids in batches:
            references = [self._targets.decode(row) for row in targets]
            yield InputBatch((waveforms, lengths), references, utterance_ids)

    def decode(self, batch: InputBatch) -> list[Decoded]:
        return _in_context(self._transcriber.transcribe(*batch.inputs), batch)

    def notes(self) -> str:
        """What the user should know about the files decoded so far."""
        if not self._soundless:
            return ""
        plural = "s" if self._soundless != 1 else ""
        return f" ({self._soundless} audio file{plural} with no sound decoded as empty lines)"

    def report(self, target: str) -> dict | None:
        """The streaming simulation's timings, when it streamed."""
        if isinstance(self._transcriber, StreamingTranscriber):
            return self._transcriber.summary()
        return None


def _in_context(decoded: list[Decoded], batch: InputBatch) -> list[Decoded]:
    """Each result with its row's reference and source."""
    count = len(decoded)
    references = batch.references or [None] * count
    sources = batch.sources or [None] * count
    return [
        result.with_context(reference, source)
        for result, reference, source in zip(decoded, references, sources, strict=True)
    ]


def decoder_for(problem: Problem) -> type[TextDecoder] | type[SpeechDecoder]:
    """The decoder class for `problem`'s inputs.

    Raises:
        ValueError: a problem without inputs (a language model).
    """
    if problem.input_modality == "speech":
        return SpeechDecoder
    if problem.input_modality is None:
        raise ValueError(
            f"problem {problem.name} has no inputs (a language model): there is nothing to decode."
        )
    return TextDecoder
