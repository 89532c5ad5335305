"""The packages of t2t_lite import each other without a cycle.

Read from the source (every `import` statement, function-level ones too), so
nothing is imported here. Each top-level module (`registry`, `hparam`,
`run_dir`, ...) and each subpackage (`data`, `training`, ...) is one node;
the registry's by-name loading of the built-in problems and models
(`importlib`) is a plugin mechanism, not an import statement, and is not an
edge.
"""

import ast
import pathlib

import t2t_lite

PACKAGE_ROOT = pathlib.Path(t2t_lite.__file__).parent


def _node(module: str) -> str | None:
    """`t2t_lite.data.problem` -> `data`; None outside t2t_lite."""
    parts = module.split(".")
    if parts[0] != "t2t_lite" or len(parts) < 2:
        return None
    return parts[1]


def _import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE_ROOT.rglob("*.py"):
        relative = path.relative_to(PACKAGE_ROOT).with_suffix("")
        source = relative.parts[0]
        if source == "__init__":
            continue
        edges = graph.setdefault(source, set())
        for statement in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(statement, ast.Import):
                targets = [alias.name for alias in statement.names]
            elif isinstance(statement, ast.ImportFrom) and statement.module:
                # `from t2t_lite import registry` names the module in the alias.
                if statement.module == "t2t_lite":
                    targets = [f"t2t_lite.{alias.name}" for alias in statement.names]
                else:
                    targets = [statement.module]
            else:
                continue
            for target in targets:
                node = _node(target)
                if node is not None and node != source:
                    edges.add(node)
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle as a list of nodes (first == last), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for successor in sorted(graph.get(node, ())):
            if state.get(successor) == "open":
                return stack[stack.index(successor) :] + [successor]
            if successor not in state:
                cycle = visit(successor)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_walk_sees_the_known_edges():
    graph = _import_graph()
    assert {"data", "decoding", "models", "serving", "training", "cli"} <= set(graph)
    assert "layers" in graph["models"]
    assert "decoding" in graph["serving"]
    assert "training" in graph["cli"]


def test_cycle_finder_finds_a_planted_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_between_packages():
    graph = _import_graph()
    assert _find_cycle(graph) is None, " -> ".join(_find_cycle(graph))


def test_training_does_not_import_decoding():
    # The trainer is handed its eval decoder (decoding.evaluation.evaluator) instead.
    assert "decoding" not in _import_graph()["training"]


def test_layers_import_nothing_of_t2t_lite():
    # docs/design.md's rule: the layers run on any Keras backend, alone.
    assert _import_graph()["layers"] == set()
