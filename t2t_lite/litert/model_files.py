"""The files of an on-device export, one directory: the model, its vocabulary
and what it takes (written by `serving.tflite_export`, read by
`litert.transcriber`)."""

MODEL_FILE = "model.tflite"
VOCABULARY_FILE = "vocabulary.json"
METADATA_FILE = "tflite.json"
