"""The house rules, read from the source: no import circles, layers that import only
downwards (the four folders, and the packages inside ``tasks/``), no package reaching into
another's private modules, and no function too long to read at once.

Imports are read with :mod:`ast`, so an import inside a function counts as much as one at
the top of the module; only those under ``if TYPE_CHECKING:`` (never run) are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGES = ("flows", "tasks", "environments", "schemas")
SOURCE = (*PACKAGES, "scripts", "benchmarks", "deploy")
MAX_FUNCTION_LINES = 60
MAX_MODULES_PER_FOLDER = 15
TASK_LAYERS = (("core",), ("plan", "rules", "verify"), ("execute", "instruct"),
               ("trajectories",), ("reconstruct",), ("gate",), ("stages",), ("pipeline",),
               ("conformance",), ("dataset",), ("exports",), ("rollouts",))
"""The packages of ``tasks/`` from the bottom up: each imports only those of earlier
layers (a stage never imports a later stage); packages of one layer import neither."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours that module ``name`` imports at run time."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                      for a in node.names}
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_is_read_from_the_source():
    graph = _graph()
    assert "tasks.pipeline" in graph["flows.run.candidate"]
    assert "tasks.dataset.store.manifest" in graph["tasks.dataset.dataset"]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_between_modules():
    assert _circles(_graph()) == []


def test_layers_import_only_downwards():
    """flows -> tasks -> environments -> schemas: a folder imports those after it only."""
    def layer(module: str) -> int:
        return PACKAGES.index(module.partition(".")[0])

    upward = {(m, d) for m, deps in _graph().items() for d in deps if layer(d) < layer(m)}
    assert upward == set()


def test_no_function_over_sixty_lines_outside_tests():
    long = []
    for folder in SOURCE:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} "
                                    f"({lines} lines)")
    assert long == []


def _crowded(root: Path, folders: tuple[str, ...]) -> list[str]:
    """The folders under ``root`` among ``folders`` (and below them) that hold more than
    ``MAX_MODULES_PER_FOLDER`` modules directly (``__init__.py`` counted)."""
    counts = {d: len(list(d.glob("*.py"))) for top in folders
              for d in (root / top, *(root / top).rglob("*")) if d.is_dir()}
    return [f"{d.relative_to(root)} ({n})" for d, n in sorted(counts.items())
            if n > MAX_MODULES_PER_FOLDER]


def test_no_source_folder_holds_more_than_fifteen_modules():
    """A folder of the source (the packages, scripts, benchmarks, deployments) is cut into
    sub-folders by role before it grows past fifteen modules."""
    assert _crowded(ROOT, SOURCE) == []


def test_the_folder_check_counts_a_sixteenth_module(tmp_path):
    folder = tmp_path / "flows" / "run"
    folder.mkdir(parents=True)
    for i in range(MAX_MODULES_PER_FOLDER):
        (folder / f"m{i}.py").touch()
    assert _crowded(tmp_path, ("flows",)) == []
    (folder / "m15.py").touch()
    assert _crowded(tmp_path, ("flows",)) == ["flows/run (16)"]


def _task_layer(module: str) -> int | None:
    """The layer of a module of ``tasks/`` (its package under ``tasks``), else None."""
    parts = module.split(".")
    if parts[0] != "tasks" or len(parts) < 2:
        return None
    return next(i for i, names in enumerate(TASK_LAYERS) if parts[1] in names)


def _wrong_direction(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Imports inside ``tasks/`` that go up a layer or across to a package of the same
    layer, and imports of ``flows`` from ``tasks/``."""
    wrong = set()
    for module, deps in graph.items():
        here = _task_layer(module)
        if here is None:
            continue
        for dep in deps:
            there = _task_layer(dep)
            if dep.startswith("flows") or there is not None and (
                    there > here or there == here and dep.split(".")[1] != module.split(".")[1]):
                wrong.add((module, dep))
    return wrong


def _public(package: str) -> set[str] | None:
    """The names a package's ``__init__`` lists in ``__all__`` (None: it lists none)."""
    init = ROOT.joinpath(*package.split("."), "__init__.py")
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return None


def _private_reaches(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Imports of a module from outside its package that the package's ``__all__`` does
    not list (where it has one), or that name a private (``_``) module."""
    packages = {m for m, p in _modules().items() if p.name == "__init__.py"}
    found = set()
    for module, deps in graph.items():
        for dep in deps:
            package, _, leaf = dep.rpartition(".")
            if package.count(".") < 1 or package not in packages:
                continue
            public = _public(package)
            if not (module == package or module.startswith(package + ".")) and (
                    leaf.startswith("_") or public is not None and leaf not in public):
                found.add((module, dep))
    return found


def test_tasks_packages_import_only_earlier_layers():
    packages = {p.stem for p in (ROOT / "tasks").iterdir()
                if (p / "__init__.py").exists() or p.suffix == ".py" and p.stem != "__init__"}
    assert packages == {name for layer in TASK_LAYERS for name in layer}
    assert _wrong_direction(_graph()) == set()


def test_the_layer_check_finds_a_planted_wrong_direction_import():
    graph = {m: set(d) for m, d in _graph().items()}
    graph["tasks.verify.verifier"].add("tasks.gate.controls")   # a stage importing a later one
    graph["tasks.plan.mix"].add("tasks.rules.grounding")        # across one layer
    graph["tasks.core.llm"].add("flows.settings")
    assert _wrong_direction(graph) == {("tasks.verify.verifier", "tasks.gate.controls"),
                                       ("tasks.plan.mix", "tasks.rules.grounding"),
                                       ("tasks.core.llm", "flows.settings")}


def test_no_package_imports_another_packages_private_module():
    graph = _graph()
    assert _private_reaches(graph) == set()
    graph["tasks.stages.validate"].add("tasks.gate.vandal")
    assert _private_reaches(graph) == {("tasks.stages.validate", "tasks.gate.vandal")}


def test_no_source_imports_a_private_name_of_another_package():
    reaches = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module and (
                    node.module.split(".")[:2] != module.split(".")[:2]):
                reaches += [f"{module}: {node.module}.{a.name}" for a in node.names
                            if a.name.startswith("_") and a.name != "__version__"]
    assert reaches == []
