"""Adoption: copy the books of a running OpenStack Placement into ours
(`manage.py import_placement`, runbook in docs/import.md), in four steps, a
module each:

- source: Placement's database, opened read-only, and the tables read;
- survey: what the source holds and every problem in it, found before
  anything is written, and what ours holds that an import would replace;
- copy: the rows written into ours, batch by batch;
- verify: ours checked against the source once the copy is done.
"""
from allocations.importer.copy import DEFAULT_BATCH_SIZE
from allocations.importer.copy import Progress
from allocations.importer.copy import Report
from allocations.importer.copy import import_books
from allocations.importer.source import ImportRefused
from allocations.importer.source import Source
from allocations.importer.source import check_revision
from allocations.importer.source import redacted
from allocations.importer.survey import Problem
from allocations.importer.survey import Survey
from allocations.importer.survey import empty_target
from allocations.importer.survey import survey
from allocations.importer.survey import target_contents
from allocations.importer.verify import verify

__all__ = ['DEFAULT_BATCH_SIZE', 'ImportRefused', 'Problem', 'Progress', 'Report', 'Source',
           'Survey', 'check_revision', 'empty_target', 'import_books', 'redacted', 'survey',
           'target_contents', 'verify']
