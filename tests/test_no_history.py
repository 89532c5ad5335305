"""The README and the code carry no history: no dates, no absolute paths of a
build machine, no issue numbers.

A number in a comment is a reason, stated without a date; the run-by-run
record (dates, commits, machines) lives in `docs/benchmarks.md`, which this
lint does not read.
"""

import doctest
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHECKED_FILES = ["README.md"]
CHECKED_DIRS = ["t2t_lite", "hparams", "problems"]
_SKIPPED_SUFFIXES = {".pyc", ".so"}

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_MONTH_NUMBER = r"(?:0?[1-9]|1[0-2])"
_DAY_NUMBER = r"(?:0?[1-9]|[12]\d|3[01])"
RULES = {
    # 2026-11-25, 2026/11/25, 2026-11 (a year and month), 25 Nov 2026, Nov 2026.
    "date": re.compile(
        rf"\b(?:19|20)\d\d([-/.]){_MONTH_NUMBER}\1{_DAY_NUMBER}\b"
        r"|\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])\b"
        rf"|\b(?:\d{{1,2}} )?{_MONTH},? (?:19|20)\d\d\b"
    ),
    # A machine's directories (/work/..., /home/<user>, /tmp/<name>, /Users/<user>,
    # /root/...), not a path inside a URL or after a variable (`$OUT/tmp/x`), and
    # not what every Linux has, such as /dev/null or /proc/cpuinfo.
    "machine path": re.compile(
        r"(?<![\w.:/~$}\-])/(?:work|home|tmp|root|Users|mnt|scratch)/[\w.\-]"
    ),
    # #13, issue 13, issue #13, issues 13 and 14; not `# comment`, not hex
    # colours such as #fff or #1a2b3c, not HTML entities such as &#39;.
    "issue number": re.compile(r"(?<![\w&#])#[1-9]\d{0,4}(?![\w])|\b[Ii]ssues? #?\d+\b"),
}


def violations(text: str) -> list[tuple[int, str, str]]:
    """Finds the history in a text.

    Args:
        text: the text to check.

    Returns:
        A list of `(line number, rule name, matched text)`, line numbers
        counted from 1, in line order.

    Example:

    >>> violations("step 3 (measured 2026-11-25)\\nfixed in issue #13\\n")
    [(1, 'date', '2026-11-25'), (2, 'issue number', 'issue #13')]
    >>> violations("# a comment, colour #fff, /dev/null, https://x.org/home/a")
    []
    """
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for name, rule in RULES.items():
            found.extend((number, name, match.group(0)) for match in rule.finditer(line))
    return found


def checked_paths(root: pathlib.Path = ROOT) -> list[pathlib.Path]:
    """Every file the lint reads: README.md and the packages' files, under `root`."""
    paths = [root / name for name in CHECKED_FILES]
    for directory in CHECKED_DIRS:
        for path in sorted((root / directory).rglob("*")):
            if (
                path.is_file()
                and "__pycache__" not in path.parts
                and not any(part.endswith(".egg-info") for part in path.parts)
                and path.suffix not in _SKIPPED_SUFFIXES
            ):
                paths.append(path)
    return paths


def history_report(root: pathlib.Path = ROOT) -> list[str]:
    """One `file:line: rule: 'text'` line per hit in the files under `root`."""
    hits = []
    for path in checked_paths(root):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # not a text file
        for number, name, matched in violations(text):
            hits.append(f"{path.relative_to(root)}:{number}: {name}: {matched!r}")
    return hits


def test_readme_and_code_carry_no_history():
    hits = history_report()
    assert not hits, "history in README.md or the code:\n" + "\n".join(hits)


def test_the_lint_reads_the_readme_and_every_package():
    relative = {str(p.relative_to(ROOT)) for p in checked_paths()}
    assert "README.md" in relative
    for directory in CHECKED_DIRS:
        assert any(name.startswith(directory + "/") for name in relative), directory


def test_a_hit_names_file_and_line(tmp_path):
    (tmp_path / "README.md").write_text("fine\nfine\nmeasured 2026-11-25\n")
    for directory in CHECKED_DIRS:
        (tmp_path / directory / "sub").mkdir(parents=True)
        (tmp_path / directory / "sub" / "a.py").write_text("x = 1\ny = 2  # see issue #13\n")
    assert history_report(tmp_path) == [
        "README.md:3: date: '2026-11-25'",
        "t2t_lite/sub/a.py:2: issue number: 'issue #13'",
        "hparams/sub/a.py:2: issue number: 'issue #13'",
        "problems/sub/a.py:2: issue number: 'issue #13'",
    ]


def test_the_docstring_example_holds():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for test in finder.find(violations, "violations", globs={"violations": violations}):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize(
    "text, rule",
    [
        ("measured 2026-11-25 on two cores", "date"),
        ("(2026-11-23 and -24)", "date"),
        ("as of 2026/11/25", "date"),
        ("the 2026-11 runs", "date"),
        ("in Nov 2026 it was", "date"),
        ("on 25 November 2026", "date"),
        ("written to /work/runs/s16/bench.json", "machine path"),
        ("see /home/alice/t2t/data", "machine path"),
        ("cache in /tmp/t2t_data", "machine path"),
        ("(`/Users/bob/clone`)", "machine path"),
        ("against issue #13's goals", "issue number"),
        ("as issue 13 asked", "issue number"),
        ("Issues 7 and 8", "issue number"),
        ("fixed by #13.", "issue number"),
        ("(#4)", "issue number"),
    ],
)
def test_the_rules_find_history(text, rule):
    assert [name for _, name, _ in violations(text)] == [rule]


@pytest.mark.parametrize(
    "text",
    [
        "# a comment that says why",
        "#   indented comment",
        "x = 1  # 4x fewer frames",
        "colour #fff and #1a2b3c",
        "an HTML entity &#39;",
        "Watanabe et al. 2017",
        "end of life in 2024",
        "sizes 1024-2048 and 3600-900",
        "frames 20-8000 Hz",
        "print to /dev/null, read /proc/cpuinfo",
        "https://www.openslr.org/resources/12/ and gs://bucket/tmp/x",
        "$OUT/tmp/decode and ${DATA}/home/x",
        "tmp_path / 'home/x'",
        "an issue of memory",
        "registry.list_hparams()[0]",
        "Dec-ibel",
    ],
)
def test_the_rules_leave_legitimate_text(text):
    assert violations(text) == []


def test_the_readme_is_a_guide_of_at_most_360_lines():
    """Run records live in docs/benchmarks.md; the README keeps the guide."""
    lines = (pathlib.Path(__file__).parent.parent / "README.md").read_text().splitlines()
    assert len(lines) <= 360, f"README.md has {len(lines)} lines"
