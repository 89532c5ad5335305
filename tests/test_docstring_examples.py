"""Every `>>>` example in a t2t_lite docstring runs and prints what it shows.

The modules are found by walking the package (and the problems and hparams
sets installed inside it), so a new or split module is covered without
being listed here. Each docstring runs in a fresh copy of its module's
globals, as `python -m doctest` runs it: an example imports whatever else it
uses (`>>> import numpy as np`), so it can be pasted as it is. The examples
print TensorFlow reprs (`TensorShape([...])`), so they run on Keras' TF
backend only.

An example that needs what a docstring cannot build (a trained model, a
dataset, a network, eSpeak NG) is marked `# doctest: +SKIP`; a module whose
every example is marked so is reported as skipped, with its count.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

# Packages whose modules are searched: the library, plus the problems and
# hparams sets, which live outside t2t_lite/ but install inside it.
PACKAGES = ("t2t_lite", "t2t_lite.problems", "t2t_lite.hparams")
OPTION_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _module_names_with_examples() -> list[str]:
    """Every module under PACKAGES whose source holds a `>>>`, without importing it."""
    found = set()
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        candidates = [(package, spec)]
        for info in pkgutil.walk_packages(spec.submodule_search_locations, package + "."):
            candidates.append((info.name, info.module_finder.find_spec(info.name)))
        for name, module_spec in candidates:
            origin = getattr(module_spec, "origin", None)
            if origin and origin.endswith(".py"):
                with open(origin, encoding="utf-8") as source:
                    if ">>>" in source.read():
                        found.add(name)
    return sorted(found)


MODULES = _module_names_with_examples()


def test_the_walk_finds_the_modules_with_examples():
    # A few that have had examples for long; a failing walk would find none.
    assert {"t2t_lite.hparam", "t2t_lite.layers.multi_head_attention"} <= set(MODULES)
    assert len(MODULES) >= 15, MODULES


def _short_name(test: doctest.DocTest, module_name: str) -> str:
    """`t2t_lite.layers.timing_signal.TimingSignal` -> `TimingSignal`."""
    return test.name[len(module_name) + 1 :] if test.name != module_name else module_name


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name):
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the examples show TensorFlow reprs; Keras runs another backend")
    module = importlib.import_module(module_name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, module_name)
    examples = [example for test in tests for example in test.examples]
    assert examples, f"{module_name} has `>>>` in its source but no docstring example"

    runner = doctest.DocTestRunner(verbose=False, optionflags=OPTION_FLAGS)
    attempted = 0
    failures: dict[str, str] = {}
    for test in tests:
        report: list[str] = []
        result = runner.run(test, out=report.append)
        attempted += result.attempted
        if result.failed:
            failures[_short_name(test, module_name)] = "".join(report)

    if attempted == 0:
        skipped = sum(bool(example.options.get(doctest.SKIP)) for example in examples)
        assert skipped == len(examples), f"{module_name}: no example ran"
        pytest.skip(f"every example of {module_name} ({skipped}) is marked +SKIP")
    assert not failures, f"{module_name}: failing examples\n" + "\n".join(failures.values())
