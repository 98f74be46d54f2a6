"""Every dashboard page, export, admin list, GET /capacity, /capacity/trends
and /metrics answers without a 5xx while claims and deletes commit
underneath: two readers go through every kind of page while a writer
claims and frees resources through allocations.services, each write
committed on its own connection, as another worker's."""
import random
import threading
import time
import traceback
import uuid

import pytest
from django.contrib.auth.models import User as Account
from django.db import connection
from django.test import Client

from allocations import services as allocation_services
from allocations.models import Consumer
from providers import trends
from providers.models import Aggregate
from providers.models import ResourceProvider
from providers.pods import services as pod_services
from providers.pods.selection import BindingRequest
from tests.support.api import PlacementClient
from tests.support.factories import add_provider
from tests.support.factories import bulk_trees

POOL = 'aaaaaaaa-0000-4000-8000-000000000042'
PROJECTS = ('proj-a', 'proj-b', 'proj-c')
USERS = ('user-1', 'user-2', 'user-3', 'user-4')
CHURN_SECONDS = 2.0
READERS = 2


def claim(rng, roots, numas):
    """A new consumer holding VCPU on a NUMA node and DISK_GB on its root,
    for a random project and user."""
    tree = rng.randrange(len(roots))
    consumer = str(uuid.uuid4())
    allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
        consumer_uuid=consumer,
        allocations={numas[tree].uuid: {'VCPU': 1}, roots[tree].uuid: {'DISK_GB': 10}},
        project_id=rng.choice(PROJECTS), user_id=rng.choice(USERS), generation=None,
        consumer_type='INSTANCE')])
    return consumer


@pytest.fixture
def cloud():
    """Six compute trees in a pool with a shared NFS store, consumers of
    three projects and four users, a pod with a tenant, two trend
    snapshots. Returns what the writer claims on and the pages' subjects."""
    roots, numas = bulk_trees(6, start=0, name='cn', pool=POOL)
    nfs = add_provider('nfs', inventories={'DISK_GB': {'total': 100000}},
                       traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[POOL])
    rng = random.Random(42)
    consumers = [claim(rng, roots, numas) for _ in range(12)]
    pod = pod_services.pod_create(name='pod-a', aggregate_uuid=POOL, thresholds={'VCPU': 80})
    pod_services.binding_request(BindingRequest('proj-a'))
    trends.snapshot_take()
    trends.snapshot_take()
    return roots, numas, nfs, consumers, pod


def pages(roots, nfs, consumer, pod):
    """(client kind, path) of every kind of page: 'staff' the dashboards
    and the admin, 'api' Placement's token."""
    root, project = roots[0], PROJECTS[0]
    dashboards = [
        '/ui/', '/ui/hosts/', '/ui/hosts/?sort=utilization&trait=HW_CPU_X86_AVX2',
        '/ui/providers/', '/ui/providers/?sort=-utilization&trait=HW_CPU_X86_AVX2',
        '/ui/providers/?sort=-free:VCPU&min_utilization=1',
        f'/ui/providers/?aggregate={POOL}&root_only=true', '/ui/providers/?export=csv',
        f'/ui/providers/{root.uuid}/', f'/ui/providers/{nfs.uuid}/', f'/ui/trees/{root.uuid}/',
        f'/ui/trees/{root.uuid}/?export=csv',
        f'/ui/consumers/{consumer}/', f'/ui/consumers/{consumer}/?export=csv',
        f'/ui/projects/{project}/', f'/ui/projects/{project}/?export=json',
        '/ui/pools/', f'/ui/pools/{POOL}/', f'/ui/pools/{POOL}/?export=csv',
        '/ui/pods/', f'/ui/pods/{pod.uuid}/', f'/ui/pods/{pod.uuid}/?export=csv',
        '/ui/usage/', *(f'/ui/usage/?project={p}' for p in PROJECTS),
        '/ui/usage/?export=csv&table=user', f'/ui/usage/?project={project}&export=json&table=type',
        '/ui/explorer/?resources=VCPU:1,DISK_GB:10&limit=5',
        f'/ui/explorer/?resources=VCPU:1&as_project={project}', '/ui/audit/',
        '/admin/providers/resourceprovider/',
        f'/admin/providers/resourceprovider/{root.pk}/change/', '/admin/providers/inventory/',
        '/admin/allocations/consumer/',
        '/admin/allocations/allocation/', '/admin/pods/pod/',
    ]
    api = ['/capacity', '/capacity?resources=VCPU:1,DISK_GB:10',
           *(f'/capacity?group_by={g}&resources=VCPU:1,DISK_GB:10'
             for g in ('aggregate', 'trait', 'root', 'availability_zone')),
           '/capacity?group_by=root&format=csv', '/capacity/trends',
           f'/capacity/trends?aggregate={POOL}', '/metrics']
    return [('staff', path) for path in dashboards] + [('api', path) for path in api]


class Churn:
    """The writer's and readers' shared books: writes made, pages read
    and those not read yet, answers 5xx (or raised) with what they said.
    A page's exception may be named with the other reader's path: Django's
    test client hears every thread's."""

    def __init__(self, listed):
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.writes = 0
        self.reads = 0
        self.unread = set(listed)
        self.failures = []

    def read(self, page):
        with self.lock:
            self.reads += 1
            self.unread.discard(page)

    def failed(self, path, what):
        with self.lock:
            self.failures.append((path, what))


def write(churn, roots, numas, consumers):
    """Claims and deletes, alternately, until told to stop: a user's last
    consumer comes and goes."""
    rng = random.Random(7)
    try:
        while not churn.stop.is_set():
            if consumers and rng.random() < 0.5:
                allocation_services.allocations_delete(
                    consumer_uuid=consumers.pop(rng.randrange(len(consumers))))
            else:
                consumers.append(claim(rng, roots, numas))
            with churn.lock:
                churn.writes += 1
    except Exception:
        churn.failed('the writer', traceback.format_exc())
    finally:
        connection.close()


def read(churn, clients, listed, start):
    """Every page in turn, each reader from its own place in the list,
    until told to stop."""
    turn = listed[start:] + listed[:start]
    try:
        while not churn.stop.is_set():
            for kind, path in turn:
                if churn.stop.is_set():
                    break
                try:
                    response = clients[kind].get(path)
                    if response.streaming:
                        b''.join(response.streaming_content)
                except Exception:
                    churn.failed(path, traceback.format_exc())
                    continue
                if response.status_code >= 400:   # 4xx: not the page meant
                    churn.failed(path, response.status_code)
                churn.read((kind, path))
    finally:
        connection.close()


@pytest.mark.slow   # 5 to 9 s: a round of every page, in-process, under the GIL
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_no_page_answers_5xx_while_claims_and_deletes_land(cloud):
    roots, numas, nfs, consumers, pod = cloud
    listed = pages(roots, nfs, consumers[0], pod)
    Account.objects.create_superuser('operator', password='pw')
    signed_in = Client()
    assert signed_in.login(username='operator', password='pw')
    churn = Churn(listed)

    def clients():
        staff = Client()
        staff.cookies = signed_in.cookies
        return {'staff': staff, 'api': PlacementClient()}

    # The first consumer's page stays (404 would be an answer, but not a page).
    writer = threading.Thread(target=write, args=(churn, roots, numas, consumers[1:]))
    readers = [threading.Thread(target=read, args=(churn, clients(), listed,
                                                   i * len(listed) // READERS))
               for i in range(READERS)]
    writer.start()
    for reader in readers:
        reader.start()
    # CHURN_SECONDS, and every page read at least once by one reader or the other.
    deadline = time.monotonic() + CHURN_SECONDS
    while time.monotonic() < deadline or churn.unread:
        if churn.failures or not all(r.is_alive() for r in readers):
            break
        time.sleep(0.05)
    churn.stop.set()
    for thread in [writer, *readers]:
        thread.join()
    assert churn.failures == []
    assert not churn.unread
    assert churn.writes >= 10, churn.writes
    assert Consumer.objects.filter(uuid=consumers[0]).exists()
    assert ResourceProvider.objects.filter(aggregates__in=Aggregate.objects.filter(
        uuid=POOL)).count() == 7
