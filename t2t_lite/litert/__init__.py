"""On-device inference with LiteRT: what runs beside a `.tflite` without TensorFlow.

Nothing in this package imports TensorFlow (a test runs it with TensorFlow
blocked): LiteRT's interpreter (`ai_edge_litert`), NumPy and soundfile are
all a phone, a board or a slim container needs beside the exported model.
"""
