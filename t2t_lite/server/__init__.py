"""t2t-lite-serve: a speech SavedModel behind HTTP, with batching and metrics.

`speech_model.py` loads an export and transcribes batches; `batcher.py`
gathers concurrent requests into batches; `audio_request.py` reads a
request's audio; `metrics.py` counts what Prometheus scrapes; `app.py` is
the aiohttp application (docs/serving.md has the protocol).
"""
