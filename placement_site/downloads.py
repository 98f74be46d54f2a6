"""Files we hand to a browser and a spreadsheet: CSV whose cells no
spreadsheet evaluates, and download names no header can be broken by.

Names in a cloud are anyone's to choose (a provider, a pod, a project id
from Keystone), so neither a cell nor a file name may carry one raw."""
import csv
import re

from django.utils.http import content_disposition_header
from django.utils.text import slugify

# OWASP's CSV Injection rule: a cell starting with one of these is read as a
# formula by Excel, LibreOffice or Google Sheets (tab and carriage return
# too: some strip them and read on). defusedcsv leaves out the last two and
# rewrites '|' inside cells, so the rule is written here.
FORMULA_STARTS = ('=', '+', '-', '@', '\t', '\r')
# A plain number (a negative one starts with '-') is data, never a formula.
PLAIN_NUMBER = re.compile(r'-?\d+(\.\d+)?([eE][-+]?\d+)?')


def cell(value):
    """`value` as a spreadsheet may safely open it: text a spreadsheet would
    evaluate gets a leading apostrophe (shown, never evaluated); numbers and
    everything else unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not (
            PLAIN_NUMBER.fullmatch(value)):
        return "'" + value
    return value


class _SafeWriter:
    """csv.writer whose rows are written cell by cell through cell()."""

    def __init__(self, out, **options):
        self._writer = csv.writer(out, **options)

    def writerow(self, row):
        return self._writer.writerow([cell(value) for value in row])


def csv_writer(out, **options):
    """A csv.writer on `out` for a file people open in a spreadsheet."""
    return _SafeWriter(out, **options)


def attachment(name, extension):
    """The Content-Disposition of a download called `name`: a slug of it
    (letters, digits, '-' and '_'; no quote, CR/LF, direction override or
    path left), in ASCII for every browser and, when the name has more
    than ASCII, in full by RFC 6266's filename*."""
    ascii_name = f"{slugify(name) or 'export'}.{extension}"
    full_name = f"{slugify(name, allow_unicode=True) or 'export'}.{extension}"
    if full_name == ascii_name:
        return content_disposition_header(True, ascii_name)
    return (f'{content_disposition_header(True, ascii_name)}; '
            f'{content_disposition_header(True, full_name).removeprefix("attachment; ")}')
