"""From a trained model to text.

Decode settings, the searches, audio limits, word times, scoring, and a
trained run's checkpoints.
"""
