"""The adoption check's parts; __main__ runs them, one backend after the
other (docs/adoption-check.md):

- servers: the database server and its databases; the real Placement and
  ours started, spoken to and stopped; import_placement run into ours;
- cloud: the seeded cloud planned, and filled into the real Placement
  through its API with the churn of a cloud with history;
- checks: what both servers are asked: every GET built from the source's
  own answers, and a client's writes prepared with the old generations;
- compare: two answers to one GET judged alike or different;
- report: one backend's results summed up, printed and judged.
"""
import sys
import time

LATEST = '1.39'


def log(message):
    print(f'[{time.strftime("%H:%M:%S")}] {message}', file=sys.stderr, flush=True)
