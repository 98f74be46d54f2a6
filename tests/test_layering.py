"""Layers point one way: placement_site (cross-cutting) <- providers (the
catalogue, and what reads it alone: candidates, capacity, pods) <- allocations (consumers,
allocations, dashboards).
Checked on the source, so a new import that breaks the rule fails the build."""
import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.any_database

ROOT = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = ('placement_site', 'providers', 'allocations')


def modules(package):
    return sorted(p for p in (ROOT / package).rglob('*.py') if 'migrations' not in p.parts)


def imported(tree):
    """(top-level package, node) for every import in a module's syntax tree."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split('.')[0], node
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split('.')[0], node


def parsed(path):
    return ast.parse(path.read_text(), filename=str(path))


def test_the_packages_are_where_the_layers_say():
    for package in PROJECT_PACKAGES:
        assert modules(package), package


@pytest.mark.parametrize('path', modules('providers'), ids=lambda p: str(p.relative_to(ROOT)))
def test_providers_never_imports_allocations(path):
    tree = parsed(path)
    assert [ast.unparse(node) for package, node in imported(tree)
            if package == 'allocations'] == []
    # Nor by name through the app registry.
    calls = [ast.unparse(node) for node in ast.walk(tree)
             if isinstance(node, ast.Call) and 'get_model' in ast.unparse(node.func)]
    assert not [call for call in calls if 'allocations' in call]


# The URL map is the one place that wires both apps' views in.
WIRING = {ROOT / 'placement_site' / 'urls.py'}


@pytest.mark.parametrize('path', modules('placement_site'), ids=lambda p: str(p.relative_to(ROOT)))
def test_placement_site_imports_neither_app(path):
    if path in WIRING:
        return
    assert [ast.unparse(node) for package, node in imported(parsed(path))
            if package in ('providers', 'allocations')] == []


@pytest.mark.parametrize('path', [p for package in PROJECT_PACKAGES for p in modules(package)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_local_imports_of_our_own_modules(path):
    """Imports inside functions are how a cycle hides: every import of a
    project module stands at the top of its module."""
    tree = parsed(path)
    top_level = {id(node) for node in tree.body}
    local = [ast.unparse(node) for package, node in imported(tree)
             if package in PROJECT_PACKAGES and id(node) not in top_level]
    assert local == []


def test_the_rules_catch_what_they_are_for(tmp_path):
    """The checks above see a function-local import of allocations."""
    sample = tmp_path / 'sample.py'
    sample.write_text('def f():\n    from allocations.models import Allocation\n')
    tree = parsed(sample)
    found = [(package, id(node) in {id(n) for n in tree.body}) for package, node in imported(tree)]
    assert found == [('allocations', False)]


def layout_table():
    """The paths in docs/architecture.md's table of the packages."""
    text = (ROOT / 'docs' / 'architecture.md').read_text()
    table = text.split('## The packages', 1)[1].split('\n\n| path |', 1)[1].split('\n\n', 1)[0]
    paths = []
    for row in table.splitlines()[2:]:
        cell = row.split('|')[1]
        paths += [p.strip('` ') for p in cell.split(',')]
    return paths


def test_the_architecture_table_matches_the_tree():
    listed = layout_table()
    assert [p for p in listed if not (ROOT / p).exists()] == []
    packages = [f'{p.relative_to(ROOT)}/' for app in PROJECT_PACKAGES
                for p in [ROOT / app, *(ROOT / app).iterdir()]
                if (p / '__init__.py').exists() and p.name not in ('migrations', 'api')]
    unlisted = [p for p in packages if p not in listed]
    assert unlisted == []
