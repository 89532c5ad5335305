"""The built-in spoken corpus: speech synthesized offline with eSpeak NG.

Used by the `spoken_synth` problem only; the rest of `t2t_lite.data` is
generic. The corpus is made in stages, one module each:

    grammar.py        the sentences (a small grammar of commands and statements)
    plan.py           what each utterance holds: sentence, voice, rate, noise
    espeak.py         the synthesizer, isolated in a helper process
    espeak_helper.py  the code that helper process runs (standard library only)
    audio.py          plans rendered into noisy 16 kHz speech
    word_times.py     when each word is said in that speech
    corpus.py         the LibriSpeech-layout tree the LibriSpeech reader reads

Importing this package imports none of them, so the helper process can be
started without loading the rest.
"""
