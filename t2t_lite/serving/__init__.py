"""Export: the SavedModel for TF Serving (T2T's `serving/` name) and the `.tflite`.

`export.export_run` turns a trainer's output_dir into `export_dir/<version>/`;
`serving_module.ServingModule` is the graph it saves (featurization,
tokenization, beam search and detokenization, all TF ops). The same speech
path run in process is `decoding.audio.transcriber`.
"""
