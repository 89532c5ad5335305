"""Runs a text model's on-device export (ids in, ids out), importing no TensorFlow.

    model = LiteRtTextModel("export_dir")
    decoded = model.decode([5, 7, 9])  # the input encoder's ids, no EOS
    decoded.text, decoded.score  # the decoder's result type

The input is token ids, as the problem's input encoder makes them (the
export carries the target vocabulary only): EOS is appended and the row
zero padded to the model's `max_input_tokens`, as the problem's records and
the SavedModel have them.
"""

from __future__ import annotations

import numpy as np

from t2t_lite.data.reserved_ids import EOS_ID
from t2t_lite.decoding.result import Decoded
from t2t_lite.litert.exported_model import ExportedModel


class LiteRtTextModel(ExportedModel):
    """A text export (`input` "ids") in LiteRT.

    Args:
        directory: where `export_tflite` wrote the model.
        num_threads: the interpreter's CPU threads.
    """

    input_kind = "ids"

    def __init__(self, directory: str, num_threads: int = 1):
        super().__init__(directory, num_threads)
        self.max_input_tokens = int(self.manifest.max_input_tokens)

    def ids(self, input_ids) -> tuple[np.ndarray, float]:
        """The best hypothesis' ids `[cap]` and its score.

        Raises:
            ValueError: more ids than the model takes (EOS counted).
        """
        row = [int(token) for token in input_ids] + [EOS_ID]
        if len(row) > self.max_input_tokens:
            raise ValueError(
                f"the input has {len(row)} tokens with EOS; this model takes at most "
                f"{self.max_input_tokens}: split the text into shorter inputs."
            )
        inputs = np.zeros([1, self.max_input_tokens], np.int32)
        inputs[0, : len(row)] = row
        return self.run(inputs)

    def decode(self, input_ids) -> Decoded:
        """The best hypothesis for `input_ids`: its text and score."""
        ids, score = self.ids(input_ids)
        return Decoded(beams=(self.vocabulary.decode(ids),), scores=(score,))
