"""T2T's reserved ids, shared by every vocabulary: 0 pads, 1 ends a sequence.

They live apart from `text_encoders` (which imports TensorFlow for its
in-graph encoders) so that the model, which runs on any Keras backend, and
the on-device detokenizer can read them without TensorFlow.
"""

PAD_ID = 0
EOS_ID = 1
NUM_RESERVED_IDS = 2
