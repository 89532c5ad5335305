"""The files of an on-device export, one directory: the model, its vocabulary
and what it takes (written by `serving.tflite_export`, read by
`litert.transcriber`)."""

MODEL_FILE = "model.tflite"
VOCABULARY_FILE = "vocabulary.json"
METADATA_FILE = "tflite.json"
# A streaming model's, beside them (`serving.tflite_stream_export`, `litert.stream`).
STEP_FILE = "stream_step.tflite"
FINAL_FILE = "stream_final.tflite"
STATE_FILE = "stream_state.npz"
