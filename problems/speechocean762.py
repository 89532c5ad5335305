"""speechocean762: read English by 250 Mandarin-speaking children and adults.

The corpus (Zhang et al., Interspeech 2021, arXiv 2104.01378; OpenSLR
resource 101, "free ... for both commercial and non-commercial purposes")
was recorded for pronunciation scoring: 5,000 short read sentences (about 6
words; some digit strings), 16 kHz mono WAV, 125 speakers in `train/` and
125 others in `test/`, about half of them children (ages 6-15; adults
19-43). Its transcripts are upper case without punctuation; this problem
lower-cases them, the built-in corpus's alphabet.

    t2t-lite-datagen --problem=speechocean762 --data_dir=$DATA --tmp_dir=$RAW

Splits: `train` is the corpus's train without the 10 speakers carved out as
`dev` (by speaker: no dev voice is heard in training); `test` is the
corpus's test, 2,500 utterances of 125 speakers never heard in training.
Every record carries its speaker's id, age and gender, so that the decoder
breaks WER down into children and adults.

Raw data, first found wins: an extracted tree `$RAW/speechocean762/`
(`train/`, `test/`, `WAVE/`), the tarball `$RAW/speechocean762.tar.gz`,
else a download of it (resumable, from OpenSLR; env
`T2T_LITE_SPEECHOCEAN762_URL` names a mirror), extracted safely into `$RAW`.
The tarball is kept. A clone of the corpus's Git repository
(jimbozhang/speechocean762) is the same tree.
"""

from __future__ import annotations

import os

from t2t_lite import registry
from t2t_lite.data.download import download
from t2t_lite.data.kaldi_problem import KaldiSpeechProblem
from t2t_lite.data.librispeech_reader import list_utterances
from t2t_lite.data.problem import EVAL, TEST, TRAIN, DataError, SplitReport
from t2t_lite.data.safe_tar import safe_extract_tar
from t2t_lite.data.spoken_synth.corpus import build_corpus
from t2t_lite.data.spoken_synth.espeak import EspeakError
from t2t_lite.data.spoken_synth.plan import TEST_VOICES, TRAIN_VOICES, CorpusConfig
from t2t_lite.data.utterance_files import UtteranceFile

OPENSLR_URL = "https://www.openslr.org/resources/101/speechocean762.tar.gz"
URL_ENV = "T2T_LITE_SPEECHOCEAN762_URL"
ARCHIVE_NAME = "speechocean762.tar.gz"


@registry.register_problem
class Speechocean762(KaldiSpeechProblem):
    """speechocean762 (see the module docstring); byte targets, lower case.

    Class attributes:
      url: where the tarball is downloaded from; None means the
        `T2T_LITE_SPEECHOCEAN762_URL` env var, else OpenSLR.

    Example:
      t2t-lite-datagen --problem=speechocean762 --data_dir=$DATA --tmp_dir=$RAW
    """

    corpus_dir_name = "speechocean762"
    data_dirs = {TRAIN: "train", TEST: "test"}
    dev_speakers = 10
    url: str | None = None

    def download_url(self) -> str:
        return self.url or os.environ.get(URL_ENV) or OPENSLR_URL

    def locate_corpus(self, tmp_dir: str) -> str:
        root = self.corpus_dir(tmp_dir)
        if os.path.isdir(os.path.join(root, "train")):
            return root
        archive = os.path.join(tmp_dir, ARCHIVE_NAME)
        if not os.path.exists(archive):
            advice = (
                f"download {ARCHIVE_NAME} from openslr.org/101 into {tmp_dir} yourself, "
                f"or set {URL_ENV} to a mirror, then run again"
            )
            download(self.download_url(), archive, advice=advice)
        safe_extract_tar(archive, tmp_dir)
        if not os.path.isdir(os.path.join(root, "train")):
            raise DataError(
                f"{archive} has no speechocean762/train/ directory; it is not OpenSLR's "
                f"{ARCHIVE_NAME}: delete it and run again to download the corpus."
            )
        return root


# eSpeak NG voices speaking the training sentences: the built-in corpus's
# nine voices and eight more accent+variant pairs (every English accent
# eSpeak NG has, female and male variants). Test speech is real, so no
# voice is held out.
SYNTH_VOICES = (
    *TRAIN_VOICES,
    *TEST_VOICES,
    "en-us+m3",
    "en-gb+f4",
    "en-029+m2",
    "en-gb-scotland+f1",
    "en-us+f5",
    "en-gb-x-rp+f3",
    "en-us-nyc+m4",
    "en-gb-x-gbclan+m5",
)


@registry.register_problem
class Speechocean762WithSynth(Speechocean762):
    """speechocean762 whose train split adds its own sentences spoken by eSpeak NG.

    Every training transcript is also spoken `synth_renderings` times by
    eSpeak NG (`spoken_synth`'s renderer: voices in turn, random rate,
    pitch, noise), and the real and synthetic utterances are shuffled
    together. Dev and test are speechocean762's real speech, as in
    `speechocean762`. The synthetic tree is built in `$RAW/<name>/` during
    datagen (about a minute per 2,000 utterances on two cores).

    Class attributes:
      synth_renderings: synthetic utterances per training sentence.
      synth_voices: the eSpeak NG voices ("accent+variant").
      synth_pitch: eSpeak's base pitch range (50 is normal; higher reaches
        towards children's voices).
    """

    synth_renderings: int = 2
    synth_voices: tuple[str, ...] = SYNTH_VOICES
    synth_pitch: tuple[int, int] = (35, 85)
    synth_seed: int = 762

    def synth_config(self, tmp_dir: str) -> CorpusConfig:
        """The synthetic corpus: the real training sentences, spoken in turn."""
        sentences = tuple(self.transcripts(tmp_dir, TRAIN))
        return CorpusConfig(
            split_sizes={TRAIN: len(sentences) * self.synth_renderings, EVAL: 0, TEST: 0},
            train_voices=tuple(self.synth_voices),
            test_voices=(),
            pitch=tuple(self.synth_pitch),
            seed=self.synth_seed,
            train_sentences=sentences,
            word_times=False,
        )

    def synth_dir(self, tmp_dir: str) -> str:
        return os.path.join(tmp_dir, self.name)

    def prepare_data(self, data_dir: str, tmp_dir: str) -> None:
        try:
            build_corpus(self.synth_dir(tmp_dir), self.synth_config(tmp_dir))
        except EspeakError as error:
            raise DataError(f"{self.name}: cannot synthesize speech: {error}") from error

    def extra_train_files(self, tmp_dir: str, report: SplitReport) -> list[UtteranceFile]:
        # build_corpus keeps a complete tree of the same sentences as it is.
        self.prepare_data("", tmp_dir)
        root = self.synth_dir(tmp_dir)
        return [UtteranceFile(*item) for item in list_utterances(root, [TRAIN], report)]
