"""One backend's results summed up into its report, the report printed,
and the verdict: every answer alike and every prepared write accepted.
"""
import re
import sys
from collections import Counter

from scripts.bench.adoption.compare import diff_text


def summary(results):
    """The report's counts and lists from compare_all's results."""
    report = {}
    verdicts = Counter(r[2] for r in results)
    report['answers'] = len(results)
    report['verdicts'] = dict(verdicts)
    report['now_dated'] = sum(1 for r in results if r[4])
    report['statuses'] = dict(Counter(str(r[5].status) for r in results))
    differences = [r for r in results if r[2] == 'different']
    report['differences'] = [
        {'path': p, 'version': v, 'problems': probs, 'detail': diff_text(o, n)}
        for p, v, _, probs, _, o, n in differences]
    report['json_only'] = [f'{v} {p}' for p, v, verdict, *_ in results
                           if verdict == 'json'][:20]
    report['json_by_endpoint'] = dict(Counter(
        endpoint_kind(p) for p, v, verdict, *_ in results if verdict == 'json'))
    report['order_only'] = [f'{v} {p}' for p, v, verdict, *_ in results
                            if verdict == 'order']
    report['order_by_endpoint'] = dict(Counter(
        endpoint_kind(p) for p, v, verdict, *_ in results if verdict == 'order'))
    report['deliberate'] = dict(Counter(
        probs[0] for p, v, verdict, probs, *_ in results if verdict == 'deliberate'))
    report['sample_only'] = [f'{v} {p}' for p, v, verdict, *_ in results
                             if verdict == 'sample']
    report['server_errors'] = sorted({f'{r[1]} {r[0]}: {r[5].status}/{r[6].status}'
                                      for r in results
                                      if max(r[5].status, r[6].status) >= 500})
    return report


def endpoint_kind(path):
    """/resource_providers/{uuid}/inventories -> /resource_providers/{u}/inventories"""
    path = path.split('?')[0]
    return re.sub(r'/[0-9a-f]{8}-[0-9a-f-]{27}', '/{u}', path)


def print_report(report, shown=3):
    out = sys.stdout
    print(f'\n== adoption check: {report["backend"]} ==', file=out)
    print(f'{"table":32} {"rows":>8}', file=out)
    for table, rows in report.get('rows', {}).items():
        print(f'{table:32} {rows:>8}', file=out)
    lines = [
        ('providers / consumers', f'{report.get("providers")} / {report.get("consumers")}'),
        ('generation > 1 (count, max)', report.get('generations_above_1')),
        ('fill (s, requests)', f'{report.get("fill_seconds")} s, '
                               f'{sum(report.get("fill_requests", {}).values())}'),
        ('import (s)', report.get('import_seconds')),
        ('answers compared', report.get('answers')),
        ('  byte-identical', report.get('verdicts', {}).get('bytes', 0)),
        ('  JSON-equal only', report.get('verdicts', {}).get('json', 0)),
        ('  lists in another order', report.get('verdicts', {}).get('order', 0)),
        ('  limited candidates, other sample', report.get('verdicts', {}).get('sample', 0)),
        ('  Last-Modified "now", apart', report.get('now_dated')),
        ('  deliberate (README)', report.get('verdicts', {}).get('deliberate', 0)),
        ('differences', report.get('verdicts', {}).get('different', 0)),
        ('statuses', report.get('statuses')),
        ('compare (s)', report.get('compare_seconds')),
    ]
    for label, value in lines:
        print(f'{label:32} {value}', file=out)
    for write in report.get('writes', []):
        print(f'prepared PUT {write["path"]} (generation {write["generation"]}): '
              f'{write["status"]}, again {write["again_status"]} '
              f'{"ok" if write["ok"] else "FAILED " + write["body"]}', file=out)
    for kind, count in sorted(report.get('json_by_endpoint', {}).items()):
        print(f'JSON-equal, keys in another order: {kind} ({count} answers)', file=out)
    for kind, count in sorted(report.get('order_by_endpoint', {}).items()):
        print(f'lists in another order: {kind} ({count} answers)', file=out)
    for reason, count in report.get('deliberate', {}).items():
        print(f'deliberate ({count} answers): {reason}', file=out)
    for d in report.get('differences', [])[:shown]:
        print(f'\nDIFFERENCE {d["version"]} {d["path"]}: {"; ".join(d["problems"])}\n'
              f'{d["detail"]}', file=out)
    if report.get('error'):
        print(f'\nERROR: {report["error"]}', file=out)


def passed(report):
    return (not report.get('error') and report.get('answers')
            and not report.get('verdicts', {}).get('different')
            and all(w['ok'] for w in report.get('writes', [])))
