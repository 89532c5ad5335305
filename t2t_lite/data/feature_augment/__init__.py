"""Augmentations of the log-mel features, applied after featurization:
SpecAugment's masks, a random spectral envelope and vocal tract length
perturbation (the waveform's are in `audio_augment/`)."""
