"""Every docstring of the library starts with a one-line summary.

Read from the source: a module's, class's or function's docstring whose
first line runs on into the next (no sentence end on it) fails here, so a
reader (and `help()`) gets what a thing is from its first line.
"""

import ast
import pathlib

import t2t_lite

PACKAGE = pathlib.Path(t2t_lite.__file__).parent
SUMMARY_ENDS = (".", ":", "?", "!", "`")


def summary_runs_on(docstring: str) -> bool:
    """Whether the docstring's first line is not a whole summary."""
    return not docstring.strip().splitlines()[0].rstrip().endswith(SUMMARY_ENDS)


def test_the_check_tells_a_summary_from_a_run_on_line():
    assert not summary_runs_on("The decoder's result.\n\nMore.")
    assert summary_runs_on("The decoder's result, with its beams\nand their scores.")


def test_every_docstring_starts_with_a_one_line_summary():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            docstring = ast.get_docstring(node, clean=False) if isinstance(node, kinds) else None
            if docstring and summary_runs_on(docstring):
                name = getattr(node, "name", "the module")
                offenders.append(f"{path.relative_to(PACKAGE.parent)}: {name}")
    assert not offenders, "\n".join(offenders)
