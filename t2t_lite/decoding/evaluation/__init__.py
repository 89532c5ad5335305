"""Decoded text scored against references: WER/CER/BLEU, by speaker, the trainer's eval."""
