"""Every package's public surface is its ``__all__``: present, sorted the way ruff's RUF022
sorts, naming only objects that exist, and leaving out nothing the package ``__init__`` binds
publicly (as every package does). Walks the whole ``engram`` tree, so a new package is covered the
day it is added; the per-area API tests (core, runtime, cartridge, ...) check more."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

import engram


def _packages() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(engram.__path__, "engram.")
        if info.ispkg and not info.name.rsplit(".", 1)[-1].startswith("_")
    )


def _public_modules() -> list[str]:
    """Modules without a leading underscore anywhere in their dotted path."""
    return sorted(
        info.name
        for info in pkgutil.walk_packages(engram.__path__, "engram.")
        if not info.ispkg and not any(part.startswith("_") for part in info.name.split("."))
    )


def _ruf022_key(name: str) -> tuple[int, str]:
    # ruff RUF022 ("isort-style"): SCREAMING_CASE, then CamelCase, then everything else.
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


def _bound_publicly(module: ModuleType) -> set[str]:
    """Public names a module's own source binds at top level (imports, defs, assignments)."""
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engram"):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def test_the_walk_sees_every_layer() -> None:
    packages = set(_packages())
    assert {"engram.core", "engram.store", "engram.runtime", "engram.conformance"} <= packages
    assert {"engram.cli", "engram.context", "engram.provider", "engram.memory"} <= packages


@pytest.mark.req("engram.package.public-api")
@pytest.mark.parametrize("name", _packages())
def test_package_all_is_sorted_complete_and_resolvable(name: str) -> None:
    package = importlib.import_module(name)
    exported = getattr(package, "__all__", None)
    assert isinstance(exported, list), f"{name} has no __all__ list"
    assert exported == sorted(exported, key=_ruf022_key), f"{name}.__all__ is not sorted"
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    unresolved = [n for n in exported if not hasattr(package, n)]
    assert not unresolved, f"{name}.__all__ names what it does not have: {unresolved}"
    left_out = sorted(_bound_publicly(package) - set(exported))
    assert not left_out, f"{name} binds public names missing from __all__: {left_out}"


@pytest.mark.req("engram.package.public-api")
@pytest.mark.parametrize("name", _public_modules())
def test_public_module_all_is_sorted_and_resolvable(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert isinstance(exported, list), f"{name} has no __all__ list"
    assert exported == sorted(exported, key=_ruf022_key), f"{name}.__all__ is not sorted"
    unresolved = [n for n in exported if not hasattr(module, n)]
    assert not unresolved, f"{name}.__all__ names what it does not have: {unresolved}"


def _internals_modules() -> list[str]:
    return [name for name in _public_modules() if name.rsplit(".", 1)[-1] == "internals"]


@pytest.mark.req("engram.package.public-api")
def test_the_walk_sees_the_internals_modules() -> None:
    assert {"engram.memory.internals", "engram.mcp.internals", "engram.cartridge.internals"} <= set(
        _internals_modules()
    )


@pytest.mark.req("engram.package.public-api")
@pytest.mark.parametrize("name", _internals_modules())
def test_internals_are_apart_from_the_public_api_and_say_so(name: str) -> None:
    # A name is either public (the package's __all__, documented in the API reference) or
    # internal (shared with other engram packages, benchmarks and tests, and free to change):
    # never both, and the module's docstring tells a reader which side they are on.
    module = importlib.import_module(name)
    package = importlib.import_module(name.rsplit(".", 1)[0])
    both = sorted(set(module.__all__) & set(package.__all__))
    assert both == [], f"{name} repeats names of the public API: {both}"
    assert "not public API" in " ".join((module.__doc__ or "").split()), name


REPO = Path(__file__).resolve().parent.parent


def _private_imports_across_packages(repo: Path = REPO) -> list[str]:
    """``file:line module`` of each import of ``engram.<pkg>._<private>`` outside ``<pkg>``."""
    found: list[str] = []
    for root in (repo / "src" / "engram", repo / "tests", repo / "bench", repo / "docs" / "hooks"):
        for file in sorted(root.rglob("*.py")):
            if "node_modules" in file.parts:
                continue
            relative = file.relative_to(repo)
            home = relative.parts[2] if relative.parts[:2] == ("src", "engram") else None
            tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    modules = [node.module]
                elif isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                else:
                    continue
                for module in modules:
                    parts = module.split(".")
                    if len(parts) < 3 or parts[0] != "engram" or not parts[2].startswith("_"):
                        continue
                    if parts[1] != home:
                        found.append(f"{relative.as_posix()}:{node.lineno} {module}")
    return found


@pytest.mark.req("engram.package.public-api")
def test_nothing_outside_a_package_imports_its_private_modules() -> None:
    # Tests, benchmarks and other packages use each package's public names (its __all__, or a
    # named hooks module such as engram.memory.internals), so a package can rearrange its
    # private modules without breaking code that is not its own.
    assert _private_imports_across_packages() == []


@pytest.mark.req("engram.package.public-api")
def test_the_private_import_scan_finds_what_it_must(tmp_path: Path) -> None:
    files = {
        "src/engram/memory/x.py": "from engram.memory._text import words\n",  # its own: fine
        "src/engram/cli/y.py": "from engram.memory._text import words\n",
        "tests/t.py": "import engram.cli._app\nfrom engram.memory import recall\n",
        "bench/b.py": "def f() -> None:\n    from engram.provider._metrics import m\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "docs" / "hooks").mkdir(parents=True)
    assert _private_imports_across_packages(tmp_path) == [
        "src/engram/cli/y.py:1 engram.memory._text",
        "tests/t.py:1 engram.cli._app",
        "bench/b.py:2 engram.provider._metrics",
    ]
