"""Problems and their data, from the readers of corpora to the input pipeline.

The package holds readers of corpora, TFRecord shards, text encoders,
featurization, augmentation and the input pipeline.
"""
