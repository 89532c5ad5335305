"""WeNet's endpoint rules as decode hparams (runtime/core/decoder/ctc_endpoint.h):
each rule's hparam, its `streaming.endpoint.EndpointRules` field and its
default. Nothing here imports TensorFlow, so the on-device runner
(`litert`) applies the rules the decode hparams set."""

ENDPOINT_RULES = (
    ("endpoint_no_speech_seconds", "silence_before_speech", 5.0),
    ("endpoint_silence_seconds", "silence_after_speech", 1.0),
    ("endpoint_max_utterance_seconds", "max_utterance", 20.0),
)
