"""The driver's calls for a recognizer that keeps its one stream's state itself.

`StreamDriver` passes a state from `start_stream` to `stream_step` to
`finish_stream`, as an export's signatures need. The Python recognizer and
the on-device one keep their utterance's state inside instead (`reset`,
`accept_waveform`, `finalize`); `StatefulBackend` answers the driver's calls
from those, so each serves one stream at a time.
"""

from __future__ import annotations

import numpy as np

from t2t_lite.decoding.result import Decoded
from t2t_lite.streaming.endpoint import StreamStep


class StatefulBackend:
    """A `StreamBackend` from a recognizer's own calls.

    The recognizer has `reset()`, `accept_waveform(samples) -> partial`,
    `finalize() -> text`, `trailing_blank_frames`, `encoded_frames`,
    `final_words` and `frame_seconds` (one encoder frame, in seconds).
    """

    def start_stream(self) -> dict:
        """A new utterance: the recognizer reset."""
        self.reset()
        return {"frames_done": 0}

    def stream_step(self, state: dict, samples: np.ndarray) -> StreamStep:
        """The recognizer fed `samples`; its partial and the seconds since its last label."""
        del state  # the recognizer's own
        partial = self.accept_waveform(samples)
        silence = self.trailing_blank_frames * self.frame_seconds
        return StreamStep(partial, silence, {"frames_done": self.encoded_frames})

    def finish_stream(self, state: dict) -> Decoded:
        """The utterance's streamed final (`finalize`), its words timed when it times them."""
        del state
        text = self.finalize()
        return Decoded((text,), (0.0,), words=self.final_words)
