"""Small generated datasets shared by the data tests."""

import pytest

from t2t_lite.data.problem import EVAL, TEST, TRAIN
from t2t_lite.problems import mini_librispeech
from t2t_lite.problems.algorithmic import AlgorithmicReverseBinary40
from tests.helpers import generate_from_tree


class SmallReverse(AlgorithmicReverseBinary40):
    """algorithmic_reverse_binary40 (the name it inherits) with few examples and
    4 training shards."""

    split_sizes = {"train": 600, "dev": 50, "test": 50}
    num_shards = {"train": 4, "dev": 1, "test": 1}


@pytest.fixture(scope="session")
def reverse_data(tmp_path_factory):
    """(problem, data_dir) with generated shards."""
    data_dir = str(tmp_path_factory.mktemp("reverse_data"))
    problem = SmallReverse()
    problem.generate_data(data_dir, data_dir + "/tmp")
    return problem, data_dir


class SmallMiniLibrispeech(mini_librispeech.MiniLibrispeech):
    """mini_librispeech (the name it inherits) in few shards."""

    num_shards = {TRAIN: 2, EVAL: 1, TEST: 1}


@pytest.fixture(scope="session")
def mini_librispeech_data(tmp_path_factory, mini_librispeech_mini):
    """(problem, data_dir): shards of the 18 real Mini LibriSpeech test files
    (two readers each of train, dev and test)."""
    problem = SmallMiniLibrispeech()
    root = tmp_path_factory.mktemp("mini_librispeech_data")
    return problem, generate_from_tree(problem, root, mini_librispeech_mini)
