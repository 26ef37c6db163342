"""The package layout is the architecture (docs/design.md): front end -> e-graph -> target.

Read from the source's import statements (every import, lazy or for type checking alike), so
these hold for what the code could load, not only for what one run happens to load.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "kalg"


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str) -> set[str]:
    """The kalg modules `module` imports anywhere in its file (a name imported from a package
    counts as its submodule where there is one). `from kalg import __version__` is left out:
    the package's face loads `kalg.api` only when its names are asked for."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "kalg"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "kalg":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in MODULES or node.module != "kalg":
                    found.add(sub if sub in MODULES else node.module)
    return found & set(MODULES) - {module}


GRAPH = {m: _imports(m) for m in MODULES}


def _reaches(start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        for nxt in GRAPH[todo.pop()] - seen:
            if nxt == goal:
                return True
            seen.add(nxt)
            todo.append(nxt)
    return False


def test_no_module_imports_itself_back():
    cycles = sorted(m for m in MODULES if _reaches(m, m))
    assert not cycles, f"import cycles through {cycles}"


def _under(prefix: str) -> list[str]:
    return [m for m in MODULES if m == prefix or m.startswith(prefix + ".")]


def test_the_algebra_and_the_egraph_name_no_target():
    for module in _under("kalg.algebra") + _under("kalg.eqsat"):
        assert not any(i.startswith("kalg.targets") for i in GRAPH[module]), module


def test_the_driver_and_the_registry_name_no_target():
    for module in ("kalg.driver", "kalg.targets"):
        assert not any(i.startswith("kalg.targets.") for i in GRAPH[module]), module


def test_targets_do_not_import_each_other_or_the_layers_above():
    above = {"kalg.api", "kalg.driver", "kalg.cli"} | set(_under("kalg.commands"))
    builds_on = {"cuda": {"cpu"}}  # the cuda target lowers the cpu target's plans
    names = ("scamp5", "cpu", "cuda")
    for name in names:
        others = [f"kalg.targets.{o}" for o in names
                  if o != name and o not in builds_on.get(name, ())]
        for module in _under(f"kalg.targets.{name}"):
            bad = {i for i in GRAPH[module]
                   if i in above or any(i == o or i.startswith(o + ".") for o in others)}
            assert not bad, (module, bad)


def test_nothing_scamp5_specific_at_the_package_root():
    root = [m for m in MODULES if m.count(".") == 1]
    for module in root:
        if module in ("kalg.api", "kalg.cli"):  # the user's faces: they may offer SCAMP-5 tools
            continue
        assert not any(i.startswith("kalg.targets.scamp5") for i in GRAPH[module]), module
