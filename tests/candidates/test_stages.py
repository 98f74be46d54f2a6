"""The search flows one way: matching and combining are pure functions of
what research found, and so is the documented result they read. Checked on
the source: those modules import no Django and nothing that reads."""
import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.any_database  # and no database at all

PACKAGE = Path(__file__).resolve().parent.parent.parent / 'providers' / 'candidates'
PURE = ('findings.py', 'matching.py', 'combine.py')
READERS = ('providers.candidates.research', 'providers.candidates.summaries',
           'providers.candidates.selector', 'providers.candidates.query')


def imported(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


@pytest.mark.parametrize('name', PURE)
def test_the_pure_stages_import_nothing_that_reads(name):
    names = list(imported(PACKAGE / name))
    assert [n for n in names if n.split('.')[0] in ('django', 'placement_site')] == []
    assert [n for n in names if n.startswith(READERS) or n.startswith('providers.models')] == []
