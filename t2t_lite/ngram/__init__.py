"""A word n-gram language model over a byte (or character) target vocabulary."""
