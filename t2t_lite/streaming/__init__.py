"""Streaming recognition (U2): a model trained with dynamic chunk masks, decoded by chunk.

It is decoded chunk by chunk with caches, partials from CTC prefix beam
search and the final from attention rescoring
(`recognizer.StreamingRecognizer`).
"""
