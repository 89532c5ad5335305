"""T2T's algorithmic problems, generated in memory: identity, reverse, addition.

Sequences are symbols `0..num_symbols-1`, written as ids shifted by 2 with
EOS appended (T2T's `generator_eos`). Training examples have 1..40 symbols,
as in T2T. T2T's dev set (lengths up to 400) measures length
generalization; t2t-lite keeps it as the `test` split and makes `dev` the
training distribution, so dev accuracy says whether the model learned the
task (and the `--eval` of `algorithmic_*` means what users expect).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from t2t_lite import registry
from t2t_lite.data.problem import EVAL, TEST, TRAIN
from t2t_lite.data.text_encoders import IntegerEncoder
from t2t_lite.data.text_problems import Text2TextProblem


class AlgorithmicProblem(Text2TextProblem):
    """Base: `sequences(rng, max_length, count)` yields (inputs, targets) symbol lists."""

    num_symbols = 2
    train_length = 40
    test_length = 400  # T2T's dev_length
    split_sizes = {TRAIN: 100000, EVAL: 1000, TEST: 1000}
    num_shards = {TRAIN: 10, EVAL: 1, TEST: 1}
    eval_metrics = ("accuracy", "accuracy_per_sequence", "neg_log_perplexity")

    @property
    def input_symbols(self) -> int:
        return self.num_symbols

    def sequences(self, rng: random.Random, max_length: int, count: int):
        raise NotImplementedError(f"{type(self).__name__} must implement sequences")

    def feature_encoders(self, data_dir: str) -> dict:
        return {
            "inputs": IntegerEncoder(self.input_symbols),
            "targets": IntegerEncoder(self.num_symbols),
        }

    def generate_text_pairs(self, data_dir: str, tmp_dir: str, split: str) -> Iterator[dict]:
        # A fixed seed per split: datagen is repeatable and splits differ.
        rng = random.Random(f"{self.name}-{split}")
        max_length = self.test_length if split == TEST else self.train_length
        for inputs, targets in self.sequences(rng, max_length, self.split_sizes[split]):
            yield {
                "inputs": " ".join(map(str, inputs)),
                "targets": " ".join(map(str, targets)),
            }


def _random_symbols(rng: random.Random, num_symbols: int, max_length: int) -> list[int]:
    return [rng.randrange(num_symbols) for _ in range(rng.randint(1, max_length))]


@registry.register_problem
class AlgorithmicIdentityBinary40(AlgorithmicProblem):
    """Copy a binary sequence of 1-40 symbols."""

    def sequences(self, rng, max_length, count):
        for _ in range(count):
            inputs = _random_symbols(rng, self.num_symbols, max_length)
            yield inputs, inputs


@registry.register_problem
class AlgorithmicReverseBinary40(AlgorithmicProblem):
    """Reverse a binary sequence of 1-40 symbols."""

    def sequences(self, rng, max_length, count):
        for _ in range(count):
            inputs = _random_symbols(rng, self.num_symbols, max_length)
            yield inputs, inputs[::-1]


def _to_number(digits: list[int], base: int) -> int:
    return sum(digit * base**i for i, digit in enumerate(digits))  # lower endian


def _to_digits(number: int, base: int) -> list[int]:
    digits = []
    while True:
        number, digit = divmod(number, base)
        digits.append(digit)
        if number == 0:
            return digits


@registry.register_problem
class AlgorithmicAdditionDecimal40(AlgorithmicProblem):
    """Add two lower-endian decimal numbers: "n1 + n2" (T2T writes + as symbol 10)."""

    num_symbols = 10

    @property
    def input_symbols(self) -> int:
        return self.num_symbols + 1  # the "+" separator is symbol `base`

    def sequences(self, rng, max_length, count):
        base = self.num_symbols
        for _ in range(count):
            first_length = rng.randrange(max_length // 2) + 1
            second_length = rng.randrange(max_length - first_length - 1) + 1
            first = [rng.randrange(base) for _ in range(first_length)]
            second = [rng.randrange(base) for _ in range(second_length)]
            total = _to_number(first, base) + _to_number(second, base)
            yield first + [base] + second, _to_digits(total, base)
