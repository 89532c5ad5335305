"""Problems and their data: readers of corpora, TFRecord shards, text encoders,
featurization, augmentation and the input pipeline."""
