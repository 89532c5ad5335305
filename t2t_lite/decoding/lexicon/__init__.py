"""Words from the phoneme CTC head through a pronunciation lexicon and the word n-gram."""
