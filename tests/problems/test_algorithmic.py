"""T2T's algorithmic problems: the right sequences, repeatable, EOS-terminated."""

import random

import pytest

from t2t_lite import registry
from t2t_lite.data.text_encoders import IntegerEncoder


@pytest.mark.parametrize(
    "name",
    [
        "algorithmic_identity_binary40",
        "algorithmic_reverse_binary40",
        "algorithmic_addition_decimal40",
    ],
)
def test_sequences_are_correct(name):
    problem = registry.problem(name)
    pairs = list(problem.sequences(random.Random(0), 40, 200))
    assert len(pairs) == 200
    for inputs, targets in pairs:
        assert 1 <= len(inputs) <= 40
        if name.endswith("identity_binary40"):
            assert targets == inputs
        elif name.endswith("reverse_binary40"):
            assert targets == inputs[::-1]
        else:
            plus = inputs.index(10)
            first, second = inputs[:plus], inputs[plus + 1 :]
            value = lambda digits: sum(d * 10**i for i, d in enumerate(digits))  # noqa: E731
            assert value(targets) == value(first) + value(second)
            assert max(inputs) <= 10 and max(targets) <= 9


def test_datagen_is_repeatable_and_eos_terminated(tmp_path):
    problem = registry.problem("algorithmic_reverse_binary40")
    problem.split_sizes = {"train": 30, "dev": 10, "test": 10}
    problem.num_shards = {"train": 2, "dev": 1, "test": 1}
    first = list(problem.generate_text_pairs("", "", "train"))
    assert first == list(problem.generate_text_pairs("", "", "train"))
    assert first != list(problem.generate_text_pairs("", "", "dev"))
    report = problem.generate_data(str(tmp_path), str(tmp_path / "tmp"))
    assert report.splits["train"].written == 30
    encoder = IntegerEncoder(2)
    import tensorflow as tf

    records = tf.data.TFRecordDataset(sorted(str(p) for p in tmp_path.glob("*-train-*-of-*")))
    decoded = [problem.decode_example(r) for r in records]
    texts = {encoder.decode(e["targets"].numpy()) for e in decoded}
    assert texts == {pair["targets"] for pair in first}
    assert all(int(e["targets"][-1]) == 1 for e in decoded)
    test_lengths = [len(p["inputs"].split()) for p in problem.generate_text_pairs("", "", "test")]
    assert max(test_lengths) > 40  # T2T's length-generalization set
