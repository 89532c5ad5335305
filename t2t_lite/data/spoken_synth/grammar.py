"""The sentence grammar of the built-in spoken corpus (`corpus`).

`make_sentence` draws commands and statements ("move the red cup on the
table", "wait five minutes") from a small grammar of templates over short,
common, lower-case English words (`vocabulary()`). Every word has one
spelling for its sound within the vocabulary (no "to"/"two", "for"/"four",
"read"), so the transcript is recoverable from the audio. A grammar rather than
random word strings gives a small byte-level model some language context,
so it can learn the task in minutes.

Example:
    >>> sentence = make_sentence(random.Random(1))
    >>> set(sentence.split()) <= set(vocabulary())
    True
"""

from __future__ import annotations

import hashlib
import json
import random

# Word classes of the grammar. Rules for adding words: short, common, lower
# case a-z, pronounced one way, and no homophone elsewhere in the vocabulary
# (hence "two" but no "to"/"too", "four" but no "for", no "read"/"close").
NUMBERS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
DIGITS = ("zero", "one") + NUMBERS[:-1]
COLORS = ("red", "blue", "green", "black", "white", "yellow", "brown", "pink", "gray")
ADJECTIVES = ("big", "small", "old", "new", "hot", "cold", "long", "short", "heavy", "empty")
# Nouns with their plurals; both forms are vocabulary words.
NOUNS = {
    "door": "doors", "window": "windows", "light": "lights", "box": "boxes",
    "cup": "cups", "book": "books", "table": "tables", "chair": "chairs",
    "bag": "bags", "ball": "balls", "hat": "hats", "coat": "coats",
    "shoe": "shoes", "key": "keys", "phone": "phones", "lamp": "lamps",
    "clock": "clocks", "desk": "desks", "pen": "pens", "map": "maps",
    "plate": "plates", "bottle": "bottles", "car": "cars", "boat": "boats",
}  # fmt: skip
ANIMALS = ("dog", "cat", "bird", "fish", "horse", "cow", "duck", "frog", "goat")
VERBS = (
    "open", "shut", "move", "find", "take", "bring", "push", "pull", "wash",
    "clean", "paint", "check", "drop", "lift", "hold", "hide", "fix", "show",
)  # fmt: skip
PLACES = ("kitchen", "garden", "hall", "office", "garage", "bedroom", "yard", "shop")
PREPOSITIONS = ("on", "in", "under", "near", "behind", "above", "below", "beside", "inside")
NAMES = ("anna", "peter", "maria", "david", "sam", "lucy", "tom", "emma", "ben", "kate")
DIRECTIONS = ("left", "right", "up", "down", "forward", "back")
TIMES = ("today", "tomorrow", "now", "later", "tonight")
UNITS = ("minutes", "hours", "seconds")

SLOTS: dict[str, tuple[str, ...]] = {
    "number": NUMBERS,
    "digit": DIGITS,
    "color": COLORS,
    "adjective": ADJECTIVES,
    "noun": tuple(NOUNS),
    "plural": tuple(NOUNS.values()),
    "animal": ANIMALS,
    "verb": VERBS,
    "place": PLACES,
    "prep": PREPOSITIONS,
    "name": NAMES,
    "direction": DIRECTIONS,
    "time": TIMES,
    "unit": UNITS,
}

# `{slot}` is replaced by a random word of that class. "{number} {plural}"
# keeps counts grammatical ("one" only goes with a singular noun).
TEMPLATES = (
    "{verb} the {noun}",
    "please {verb} the {adjective} {noun}",
    "{verb} the {color} {noun} {prep} the {noun}",
    "{verb} the {noun} in the {place}",
    "the {animal} is {prep} the {noun}",
    "the {adjective} {animal} is in the {place}",
    "{name} has one {color} {noun}",
    "{name} has {number} {color} {plural}",
    "there are {number} {plural} {prep} the {noun}",
    "where is the {color} {noun}",
    "is the {noun} in the {place}",
    "{name} and {name} are in the {place}",
    "{name} will {verb} the {noun} {time}",
    "go {direction} {number} steps",
    "turn {direction}",
    "turn {direction} and stop",
    "wait {number} {unit}",
    "call {name} {time}",
    "hello {name}",
    "good morning {name}",
    "good night {name}",
    "the code is {digit} {digit} {digit} {digit}",
    "my {animal} is {adjective}",
    "start the {color} {noun} now",
)
COMPOUND_PROBABILITY = 0.25  # "<sentence> and then <sentence>", up to 12 words
MIN_WORDS, MAX_WORDS = 2, 12


def _template_words(template: str) -> set[str]:
    return {word for word in template.split() if not word.startswith("{")}


def vocabulary() -> list[str]:
    """Every word the grammar can produce, sorted.

    Returns:
      The distinct words (about 170).

    Example:
      >>> len(vocabulary()) >= 100
      True
    """
    words = {"and", "then"}  # the compound joiner
    for template in TEMPLATES:
        words |= _template_words(template)
    for choices in SLOTS.values():
        words.update(choices)
    return sorted(words)


def _expand(template: str, rng: random.Random) -> list[str]:
    words = []
    for token in template.split():
        if token.startswith("{"):
            words.append(rng.choice(SLOTS[token[1:-1]]))
        else:
            words.append(token)
    return words


def make_sentence(rng: random.Random) -> str:
    """One random sentence of the grammar: 2-12 lower-case words, single spaces.

    Args:
      rng: the random source; the same state gives the same sentence.

    Returns:
      The sentence, e.g. "move the red cup on the table".

    Example:
      >>> make_sentence(random.Random(0))
      'tom will shut the bag tonight'
    """
    words = _expand(rng.choice(TEMPLATES), rng)
    if rng.random() < COMPOUND_PROBABILITY:
        second = _expand(rng.choice(TEMPLATES), rng)
        if len(words) + 2 + len(second) <= MAX_WORDS:
            words += ["and", "then"] + second
    return " ".join(words)


def grammar_fingerprint() -> str:
    """A hash of the grammar: editing it invalidates trees made with the old one."""
    grammar = json.dumps(
        {"slots": SLOTS, "templates": TEMPLATES, "compound": COMPOUND_PROBABILITY},
        sort_keys=True,
    )
    return hashlib.sha256(grammar.encode()).hexdigest()[:16]
