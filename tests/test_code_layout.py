"""The code layout's rules, measured on the code itself (README, "Code layout").

A newcomer finds each job by folder name and each name in one home; these tests keep it so:
- nothing in ``transforms/`` (or ``companion/``) imports from ``pipeline/``, and no module imports itself back
  through a cycle;
- at most two modules sit directly in ``transforms/``; a module's name does not repeat its package's
  (``push/ledger.py``, not ``push/push_ledger.py``); tests mirror the tree: the test of
  ``transforms/push/ledger.py`` is ``tests/transforms/push/test_ledger.py``, at least 70% of modules have
  one, and every test folder but ``tests/scenarios/``, ``tests/deployment/`` and ``tests/standin_tests/``
  (end to end, packaging, and the stand-in servers themselves) holds only tests named after a module;
- no module over 500 lines of code, no function or method over 80 (docstrings, comments and
  blank lines are not counted: a limit never costs a usage example or a word of explanation);
- elements that travel between stages are read by name: at most 15 positional reads ``x[n]``
  (n >= 2) in all, and ``Any`` at most 150 times;
- a source is its package: no module outside ``transforms/sources/<name>/`` names a built-in
  source (imports from its package, or a string that is its name or its ``migrate <name>``
  command); the others reach it through the registry (``transforms/sources/registry.py``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest
from repo_files import ROOT

PACKAGES = ("pipeline", "transforms", "companion")


def _modules() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in _modules()}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Ids of the import nodes under ``if TYPE_CHECKING:`` (they never run, so they make no cycle)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return found


def _imports(name: str) -> set[str]:
    """The project modules ``name`` imports when it runs, at the top or inside a function (``from
    a.b import c`` counts ``a.b.c`` when that is a module)."""
    found = set()
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    skipped = _type_checking_only(TREES[name])
    for node in ast.walk(TREES[name]):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base])
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in MODULES and target != name)
    return found


def test_transforms_never_imports_pipeline():
    wrong = [
        f"{name} imports {target}"
        for name in MODULES
        if name.startswith(("transforms", "companion"))
        for target in _imports(name)
        if target.startswith("pipeline")
    ]
    assert wrong == []


def test_no_import_cycle():
    graph = {name: _imports(name) for name in MODULES}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_transforms_is_folders_by_job():
    flat = sorted(p.name for p in (ROOT / "transforms").glob("*.py") if p.name != "__init__.py")
    assert len(flat) <= 2, flat


def test_module_names_do_not_repeat_their_package():
    repeating = sorted(name for name, path in MODULES.items() if path.stem.startswith(f"{path.parent.name}_"))
    assert repeating == []


def _mirrored_test(path: Path) -> Path:
    """Where the test of the module at ``path`` sits: its folder under ``tests/``, ``test_`` + its name."""
    relative = path.relative_to(ROOT)
    return ROOT / "tests" / relative.parent / f"test_{relative.name}"


def test_most_modules_have_a_test_that_mirrors_them():
    modules = [path for path in MODULES.values() if path.name not in ("__init__.py", "__main__.py")]
    missing = sorted(_name(path) for path in modules if not _mirrored_test(path).is_file())
    share = 1 - len(missing) / len(modules)
    assert share >= 0.70, f"{share:.0%} of modules have a test; without one: {', '.join(missing)}"


_NOT_MIRRORS = ("scenarios", "deployment", "standin_tests", "standins", "helpers", "data")


def test_every_mirrored_test_names_a_module():
    mirrors = {_mirrored_test(path) for path in MODULES.values()}
    strays = sorted(
        str(test.relative_to(ROOT))
        for test in (ROOT / "tests").rglob("test_*.py")
        if test.parent != ROOT / "tests"
        and test.relative_to(ROOT / "tests").parts[0] not in _NOT_MIRRORS
        and test not in mirrors
    )
    assert strays == []


def _documentation_lines(tree: ast.Module) -> set[int]:
    """Lines of string statements: docstrings of modules, classes and functions, and the strings
    that document an attribute or a constant below it."""
    return {
        line
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }


_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def _code_lines(source: str, tree: ast.Module) -> set[int]:
    """The line numbers of ``source`` that hold code: a token other than a comment, and not in a
    docstring (a string that is code, such as a help text, counts on every line it spans)."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    return lines - _documentation_lines(tree)


def test_code_lines_leave_out_documentation():
    """The counter counts what it says: 4 lines of code among docstrings, comments and blanks."""
    source = '''"""Module docstring,
over two lines."""

# a comment
X = 1  # counts
"""X's documentation."""


def f():
    """Docstring."""
    # comment
    return (X,
            2)
'''
    assert sorted(_code_lines(source, ast.parse(source))) == [5, 9, 12, 13]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_and_function_size(name):
    code = _code_lines(MODULES[name].read_text(encoding="utf-8"), TREES[name])
    assert len(code) <= 500, f"{name} has {len(code)} lines of code"
    long = [
        f"{node.name} ({size} lines of code)"
        for node in ast.walk(TREES[name])
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (size := len(code & set(range(node.lineno, (node.end_lineno or node.lineno) + 1)))) > 80
    ]
    assert long == []


def _positional_reads() -> list[str]:
    return [
        f"{name}:{node.lineno}"
        for name, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and type(node.slice.value) is int
        and node.slice.value >= 2
    ]


def test_elements_are_read_by_name():
    reads = _positional_reads()
    assert len(reads) <= 15, reads


def test_any_is_rare():
    count = sum(
        1
        for tree in TREES.values()
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and node.id == "Any")
        or (isinstance(node, ast.Attribute) and node.attr == "Any")
    )
    assert count <= 150


# The built-in sources: the packages the registry finds (transforms/sources/<name>/command.py).
SOURCES = sorted(path.parent.name for path in (ROOT / "transforms" / "sources").glob("*/command.py"))

# Modules that name a built-in source by nature, each with why.
_STILL_NAMING = {
    # copy moves ZITADEL organizations between instances: a ZITADEL export is its input by nature.
    ("pipeline.copy_instance", "zitadel"),
    ("transforms.push.instance_moves", "zitadel"),
    # The table's --hash-form takes a framework's name for its hash form ("supabase": bcrypt), the
    # word the Supabase source is named by; it names the hash form, not the source.
    ("transforms.sources.table.hashes", "supabase"),
    # The table's --hash-form takes framework names; "aspnet" there names ASP.NET's hash form
    # (a framework's users table), which is also the name of the ASP.NET Identity source.
    ("transforms.sources.table.hashes", "aspnet"),
}


def _names_of_sources(name: str) -> set[str]:
    """The built-in sources the module ``name`` names outside their own package."""
    tree, found = TREES[name], set()
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        for source in SOURCES:
            if name == f"transforms.sources.{source}" or name.startswith(f"transforms.sources.{source}."):
                continue
            package = f"transforms.sources.{source}"
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                modules = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                modules = []
            if any(m == package or m.startswith(package + ".") for m in modules):
                found.add(source)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                if node.value == source or re.search(rf"\bmigrate {source}\b", node.value):
                    found.add(source)
    return found


def test_no_module_outside_a_sources_package_names_it():
    """The companion (``companion/`` and its command, ``pipeline/companion.py``) is left out: it
    calls the old identity systems' own sign-in APIs (Auth0's, Keycloak's, ...), which it names as
    systems, not as the tool's sources."""
    assert SOURCES, "no built-in source found"
    naming = {
        (name, source)
        for name in MODULES
        if not name.startswith("companion") and name != "pipeline.companion"
        for source in _names_of_sources(name)
    }
    assert naming - _STILL_NAMING == set()
    assert _STILL_NAMING - naming == set(), "a module no longer names the source: drop it from the list"
