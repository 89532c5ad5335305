"""Small generated datasets shared by the data tests."""

import pytest

from t2t_lite.problems.algorithmic import AlgorithmicReverseBinary40


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
