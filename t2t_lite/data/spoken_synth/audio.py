"""The audio of the spoken corpus: plans rendered into noisy 16 kHz speech.

`render_utterance` speaks an `UtterancePlan` (`plan`) with eSpeak NG at
22.05 kHz, resamples it to 16 kHz, peak-normalizes it, pads it with silence
and mixes in white or pink noise at the planned SNR; it also says when each
word is said in that audio (`word_times`). Each utterance's noise comes from
its own seed, so worker count and order never change a sample.
`join_with_pauses` makes a long recording of test utterances: their samples
exactly, joined with pauses of quiet white noise, each component starting at
`component_starts`. Nothing here writes files (`corpus` does).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.fft

from t2t_lite.data import audio_io
from t2t_lite.data.audio_io import SAMPLE_RATE
from t2t_lite.data.spoken_synth.espeak import EspeakSynthesizer
from t2t_lite.data.spoken_synth.plan import CorpusConfig, UtterancePlan
from t2t_lite.data.spoken_synth.spoken_word_times import WordTime, locate_words, word_starts

PEAK_LEVEL = 0.7  # speech peak before noise: headroom so noise never clips


def _noise(num_samples: int, color: str, rng: np.random.Generator) -> np.ndarray:
    """Unit-power white or pink (1/f power) noise."""
    if color == "white":
        noise = rng.standard_normal(num_samples)
    elif color == "pink":
        # Shape white noise by 1/sqrt(f) in amplitude; an FFT-friendly length
        # (then trimmed) keeps this fast for any utterance length.
        length = scipy.fft.next_fast_len(num_samples, real=True)
        spectrum = np.fft.rfft(rng.standard_normal(length))
        frequencies = np.arange(spectrum.size, dtype=np.float64)
        frequencies[0] = 1.0  # keep DC finite; the mean is removed below anyway
        noise = np.fft.irfft(spectrum / np.sqrt(frequencies), n=length)[:num_samples]
        noise -= noise.mean()
    else:
        raise ValueError(f"noise color must be 'white' or 'pink', got {color!r}.")
    return noise / max(float(np.sqrt(np.mean(np.square(noise)))), 1e-12)


def render_utterance(
    plan: UtterancePlan, synthesizer: EspeakSynthesizer
) -> tuple[np.ndarray, list[WordTime]]:
    """Speaks `plan.text`, applies the planned silences and noise, and times its words.

    Args:
      plan: the utterance's plan (text, voice, rate, pitch, noise).
      synthesizer: an eSpeak NG synthesizer (one per process).

    Returns:
      `(waveform, words)`: float32 mono samples at 16 kHz in [-1, 1],
      identical for identical plans; and one `WordTime` per word of
      `plan.text`, in that waveform's clock (see `word_times`), or none
      when the plan is not `timed`.

    Raises:
      WordMismatchError: eSpeak NG did not speak the text's words one to one.

    Example:
      >>> from t2t_lite.data.spoken_synth.plan import plan_corpus
      >>> plan = plan_corpus(CorpusConfig(split_sizes={"test": 1}))["test"][0]
      >>> with EspeakSynthesizer() as synthesizer:  # doctest: +SKIP
      ...     waveform, words = render_utterance(plan, synthesizer)
    """
    speech, rate, events = synthesizer.synthesize_words(
        plan.text, voice=plan.voice, rate_wpm=plan.rate_wpm, pitch=plan.pitch
    )
    speech = audio_io.resample(speech, rate, SAMPLE_RATE).astype(np.float64)
    # A common peak level: eSpeak's variants differ by up to 4x in loudness
    # (klatt is quiet) and a few touch full scale.
    speech *= PEAK_LEVEL / max(float(np.abs(speech).max()), 1e-6)
    speech_power = float(np.mean(np.square(speech)))
    lead_samples = round(plan.lead_silence_s * SAMPLE_RATE)

    def first_phoneme(word: str) -> str:
        # Only words eSpeak NG merged with the previous one are spoken alone.
        alone = synthesizer.synthesize_words(
            word, voice=plan.voice, rate_wpm=plan.rate_wpm, pitch=plan.pitch
        )[2]
        return alone[0].phonemes[0][0] if alone and alone[0].phonemes else ""

    words = []
    if plan.timed:
        starts = word_starts(plan.text, events, first_phoneme)
        words = locate_words(starts, rate, speech, lead_samples)
    waveform = np.concatenate(
        [np.zeros(lead_samples), speech, np.zeros(round(plan.tail_silence_s * SAMPLE_RATE))]
    )
    if plan.snr_db is not None:
        rng = np.random.default_rng(plan.noise_seed)
        noise_rms = np.sqrt(speech_power / 10.0 ** (plan.snr_db / 10.0))
        waveform += noise_rms * _noise(waveform.size, plan.noise_color, rng)
    peak = float(np.abs(waveform).max())
    if peak > 0.99:  # rare: loud noise peaks; scale rather than clip
        waveform *= 0.99 / peak
    return waveform.astype(np.float32), words


def join_with_pauses(
    components: Sequence[np.ndarray], config: CorpusConfig, noise_seed: Sequence[int]
) -> np.ndarray:
    """int16 utterances -> one int16 recording, with noisy pauses between them.

    The components' samples are kept exactly; each pause is
    `config.long_pause_s` of white noise `config.long_pause_noise_db` below
    the RMS level of the components together (never digital silence).

    Args:
      components: int16 PCM waveforms, in order.
      config: the corpus parameters.
      noise_seed: the seed of the pauses' noise.

    Returns:
      The int16 recording.

    Example:
      >>> parts = [np.full(4, 1000, np.int16), np.full(2, -1000, np.int16)]
      >>> config = CorpusConfig(long_pause_s=3 / SAMPLE_RATE)
      >>> join_with_pauses(parts, config, (0, 0, 0)).size
      9
    """
    pause = config.long_pause_samples
    speech = np.concatenate(components).astype(np.float64) / 32767.0
    level = float(np.sqrt(np.mean(np.square(speech)))) * 10.0 ** (-config.long_pause_noise_db / 20)
    rng = np.random.default_rng(tuple(noise_seed))
    starts = component_starts([len(component) for component in components], config)
    recording = np.empty(starts[-1] + len(components[-1]), np.int16)
    for number, (start, component) in enumerate(zip(starts, components, strict=True)):
        if number:
            recording[start - pause : start] = audio_io.to_int16_pcm(
                level * _noise(pause, "white", rng)
            )
        recording[start : start + len(component)] = component
    return recording


def component_starts(sizes: Sequence[int], config: CorpusConfig) -> list[int]:
    """Where each component of a long recording starts in it (`join_with_pauses`).

    Args:
      sizes: the components' sample counts, in order.
      config: the corpus parameters (`long_pause_samples`).

    Returns:
      The components' first sample indices in the recording.

    Example:
      >>> component_starts([4, 2, 5], CorpusConfig(long_pause_s=3 / SAMPLE_RATE))
      [0, 7, 12]
    """
    starts = [0]
    for size in sizes[:-1]:
        starts.append(starts[-1] + size + config.long_pause_samples)
    return starts
