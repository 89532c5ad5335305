"""Project Gutenberg books as LibriSpeech-style text.

Boilerplate stripped, numbers and abbreviations spelled out, one sentence a
line, and the held-out readers' words kept out.
"""
