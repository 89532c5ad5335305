"""Streaming, simulated over recordings: transcripts, compute time and latency.

    transcriber = StreamingTranscriber(model, run_config, decode_config, encoder, chunk_frames=16)
    results = transcriber(waveforms, lengths)   # as WaveformTranscriber returns them
    transcriber.summary()                       # real-time factor and latencies

Each recording is fed to a `StreamingRecognizer` through the streaming loop
(`driver.stream_recording`, as one utterance: no endpointing) in chunks of
`chunk_frames` encoder frames of audio (40 ms each), as a microphone would
deliver it, and each step is timed; the final is the streamed state's.
Latency is read in simulated real time: chunk `k` can start when its
audio has arrived (`audio_end[k]`) and the previous chunk is done, so its
partial is ready at `ready[k] = max(audio_end[k], ready[k-1]) +
compute[k]`; the final is ready the finalize's compute time after the
last partial.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from t2t_lite.decoding.decode_config import DecodeConfig
from t2t_lite.decoding.result import Decoded
from t2t_lite.decoding.run_config import RunConfig
from t2t_lite.streaming.driver import chunk_samples, stream_recording
from t2t_lite.streaming.recognizer import StreamingRecognizer


@dataclasses.dataclass
class StreamTiming:
    """The timing of one recording streamed.

    Per chunk, where its audio ends, its compute time and its partial; then
    the final and finalize's compute time.
    """

    audio_ends: list[float]
    computes: list[float]
    partials: list[str]
    final: str
    final_compute: float

    def ready_times(self) -> list[float]:
        """When each partial is ready, in simulated real time (seconds)."""
        ready, now = [], 0.0
        for audio_end, compute in zip(self.audio_ends, self.computes, strict=True):
            now = max(audio_end, now) + compute
            ready.append(now)
        return ready

    def final_ready(self) -> float:
        """When the final transcript is ready, in simulated real time."""
        ready = self.ready_times()
        return (ready[-1] if ready else 0.0) + self.final_compute

    def final_latency(self) -> float:
        """Seconds from the end of the audio to the final transcript."""
        return self.final_ready() - (self.audio_ends[-1] if self.audio_ends else 0.0)

    def word_delays(self, word_ends: dict[int, float], exact: bool = True) -> list[float]:
        """The delay of each final word with a known end: seconds until a partial shows it.

        For each final word `i` with a known end in the audio
        (`word_ends[i]`, seconds), the seconds from that end to the first
        partial that shows it (the final's own time when none does): a
        partial whose first `i + 1` words are the final's (`exact`), or that
        has `i + 1` words at all, however spelled (the word was emitted).
        """
        words = self.final.split()

        def shows(partial: str, i: int) -> bool:
            got = partial.split()
            return got[: i + 1] == words[: i + 1] if exact else len(got) > i

        ready, final_ready = self.ready_times(), self.final_ready()
        delays = []
        for i, end in sorted(word_ends.items()):
            shown = next(
                (t for t, p in zip(ready, self.partials, strict=True) if shows(p, i)), final_ready
            )
            delays.append(shown - end)
        return delays


def stream(recognizer: StreamingRecognizer, waveform: np.ndarray) -> tuple[StreamTiming, Decoded]:
    """`waveform` through the streaming loop as one utterance: its timing and streamed final.

    Each step is timed.
    """
    timing = StreamTiming([], [], [], "", 0.0)
    final = Decoded(("",), (0.0,))

    def on_step(step, seconds):
        timing.audio_ends.append(step.end)
        timing.computes.append(seconds)
        timing.partials.append(step.partial)

    def on_final(decoded, seconds):
        nonlocal final
        final, timing.final, timing.final_compute = decoded, decoded.text, seconds

    stream_recording(recognizer, waveform, on_step, on_final, endpointed=False,
                     streamed_finals=True)  # fmt: skip
    return timing, final


class StreamingTranscriber:
    """The decoder's streaming simulation (decode hparam `chunk_frames`).

    Called as `WaveformTranscriber` is: `(waveforms, lengths)` -> per
    recording a `Decoded` of its final (one beam, score 0: the stream keeps
    no beam scores) with its words timed (`StreamingRecognizer.final_words`).
    """

    timed_words = True  # a streaming model has the CTC head word times need

    def __init__(self, model, run_config: RunConfig, decode_config: DecodeConfig, target_encoder,
                 chunk_frames: int):  # fmt: skip
        self.recognizer = StreamingRecognizer(
            model, run_config, decode_config, target_encoder, chunk_frames
        )
        self.sample_rate = self.recognizer.sample_rate
        self.chunk_samples = chunk_samples(self.recognizer)
        self.timings: list[StreamTiming] = []

    def __call__(self, waveforms, lengths) -> list[Decoded]:
        results = []
        for waveform, length in zip(np.asarray(waveforms), np.asarray(lengths), strict=True):
            timing, final = stream(self.recognizer, waveform[:length])
            self.timings.append(timing)
            results.append(final)
        return results

    transcribe = __call__  # as `WaveformTranscriber.transcribe`, words timed

    def summary(self) -> dict:
        """Real-time factor, per-chunk compute and final latency (ms) of every recording so far."""
        chunks = [c for t in self.timings for c in t.computes]
        audio = sum(t.audio_ends[-1] for t in self.timings if t.audio_ends)
        finals = [t.final_latency() for t in self.timings]
        compute = sum(chunks) + sum(t.final_compute for t in self.timings)
        return {
            "chunk_ms": 1000.0 * self.chunk_samples / self.sample_rate,
            "real_time_factor": compute / audio if audio else 0.0,
            "chunk_compute_ms_p50": 1000.0 * float(np.percentile(chunks, 50)) if chunks else 0.0,
            "chunk_compute_ms_p90": 1000.0 * float(np.percentile(chunks, 90)) if chunks else 0.0,
            "final_latency_ms_p50": 1000.0 * float(np.percentile(finals, 50)) if finals else 0.0,
            "final_latency_ms_p90": 1000.0 * float(np.percentile(finals, 90)) if finals else 0.0,
        }
