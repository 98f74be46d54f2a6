"""The Django admin: every model's changelist renders without per-row
queries, edits go through the services (generations bumped as the API bumps
them), and an edit that would break an invariant is refused with the domain
error's message and changes nothing."""
import html
import re
import uuid as uuid_lib

import os_resource_classes
import os_traits
import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.core.management import call_command
from django.db import OperationalError
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from allocations import services as allocation_services
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import User
from placement_site import retries
from placement_site.admin import SHOWN
from placement_site.admin import RelatedOnly
from providers import services
from providers.admin.inlines import InventoryFormSet
from providers.admin.resource_providers import ResourceProviderAdmin
from providers.models import Aggregate
from providers.models import Event
from providers.models import Inventory
from providers.models import PoolLabel
from providers.models import ProviderAggregate
from providers.models import ProviderTrait
from providers.models import ResourceClass
from providers.models import ResourceProvider
from providers.models import Trait
from providers.pods import services as pod_services
from providers.pods.admin import PodForm
from providers.pods.models import Pod
from providers.pods.models import PodBinding
from tests.support.admin import admin_url
from tests.support.admin import form_data
from tests.support.api import generation
from tests.support.api import new_uuid
from tests.support.state import unchanged

AGGREGATE = str(uuid_lib.uuid4())
INVENTORIES = 'inventories'
TRAITS = 'providertrait_set'
AGGREGATES = 'provideraggregate_set'


def provider(name):
    return ResourceProvider.objects.get(name=name)


def rc_id(name):
    return ResourceClass.objects.get(name=name).pk


def add_row(data, prefix, **fields):
    index = int(data[f'{prefix}-TOTAL_FORMS'])
    data[f'{prefix}-TOTAL_FORMS'] = index + 1
    for name, value in fields.items():
        data[f'{prefix}-{index}-{name}'] = value


def inventory_key(data, resource_class, field):
    """The POST key of `field` in the inventory row of `resource_class`."""
    class_id = rc_id(resource_class)
    for index in range(int(data[f'{INVENTORIES}-TOTAL_FORMS'])):
        if data.get(f'{INVENTORIES}-{index}-resource_class') == class_id:
            return f'{INVENTORIES}-{index}-{field}'
    raise AssertionError(f'no {resource_class} inventory row')


def messages_of(response):
    return [str(message) for message in response.context['messages']]


def form_errors(response):
    """The errors of a change form shown again (main form and inlines)."""
    assert response.status_code == 200, response.content
    return [str(error) for item in response.context['errors']
            for error in ([item] if isinstance(item, str) else item)]


def edit_provider(client, name, change, **post):
    """Load the provider's change form, let `change` edit its data, post it."""
    url = admin_url(ResourceProvider, 'change', provider(name).pk)
    data = form_data(client.get(url))
    change(data)
    return client.post(url, data, **post)


def setting(resource_class, field, value):
    """A change for edit_provider: `field` of the inventory row of
    `resource_class` set to `value`."""
    def change(data):
        data[inventory_key(data, resource_class, field)] = value
    return change


def refused_edit(client, name, change):
    """The errors shown for an edit of provider `name` (see edit_provider)
    that the form refuses; the edit changes nothing."""
    with unchanged():
        return form_errors(edit_provider(client, name, change))


def delete_selected(client, model, objs, confirm=True):
    data = {'action': 'delete_selected', '_selected_action': [obj.pk for obj in objs]}
    if confirm:
        data['post'] = 'yes'
    return client.post(admin_url(model), data, follow=True)


@pytest.fixture
def cloud(api):
    """parent (child numa0), busy (VCPU 8, 6 of them allocated to an
    INSTANCE, some memory to an untyped consumer, a trait, an aggregate),
    spare (empty), a custom class and a custom trait."""
    parent = api.create_provider(name='parent')['uuid']
    numa0 = api.create_provider(name='numa0', parent=parent)['uuid']
    api.set_inventory(numa0, {'VCPU': {'total': 4}})
    busy = api.create_provider(name='busy')['uuid']
    api.put('/resource_classes/CUSTOM_GPU', version='1.7')
    api.set_inventory(busy, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096},
                             'CUSTOM_GPU': {'total': 2}})
    api.set_traits(busy, ['HW_CPU_X86_AVX2'])
    api.put('/traits/CUSTOM_RACK1')
    api.set_aggregates(busy, [AGGREGATE])
    assert api.allocate(new_uuid(), {busy: {'VCPU': 6, 'MEMORY_MB': 1024}}).status_code == 204
    untyped = api.put(f'/allocations/{new_uuid()}', {  # written before 1.38: type unknown
        'allocations': {busy: {'resources': {'MEMORY_MB': 512}}}, 'project_id': 'proj',
        'user_id': 'user', 'consumer_generation': None}, version='1.28')
    assert untyped.status_code == 204, untyped.content
    api.create_provider(name='spare')
    return {'parent': parent, 'numa0': numa0, 'busy': busy}


# ---- every model is listed, filtered and shown --------------------------------

# (model, query, how many rows the cloud fixture gives).
CHANGELISTS = [
    (ResourceProvider, '', 4), (ResourceProvider, '?root=yes', 3),
    (ResourceProvider, '?root=no', 1), (ResourceProvider, '?allocated=yes', 1),
    (ResourceProvider, '?allocated=no', 3), (ResourceProvider, '?q=busy', 1),
    (ResourceProvider, '?inventories__resource_class__id__exact=0', 2),   # numa0, busy
    (ResourceProvider, '?o=-5', 4),   # by inventory count
    (Inventory, '', 4), (Inventory, '?resource_class__id__exact=0', 2), (Inventory, '?q=busy', 3),
    (ResourceClass, '', len(os_resource_classes.STANDARDS) + 1), (ResourceClass, '?custom=yes', 1),
    (ResourceClass, '?q=GPU', 4),   # VGPU, VGPU_DISPLAY_HEAD, PGPU, CUSTOM_GPU
    (Trait, '', len(os_traits.get_traits()) + 1), (Trait, '?custom=no&associated=yes', 1),
    (Trait, '?q=CUSTOM', 1),
    (Aggregate, '', 1), (Aggregate, '?q=' + AGGREGATE[:8], 1),
    (Consumer, '', 2), (Consumer, '?consumer_type=unknown', 1), (Consumer, '?q=proj', 2),
    (Allocation, '', 3), (Allocation, '?q=busy', 3),
    (Project, '', 1), (User, '', 1), (ConsumerType, '', 1),
]


def test_changelists_render(admin_client, cloud):
    for model, query, count in CHANGELISTS:
        response = admin_client.get(admin_url(model) + query)
        assert response.status_code == 200, (model, query)
        assert response.context['cl'].result_count == count, (model, query)


def test_related_filters_select_rows(admin_client, cloud):
    busy = provider('busy')
    trait = Trait.objects.get(name='HW_CPU_X86_AVX2')
    aggregate = Aggregate.objects.get(uuid=AGGREGATE)
    consumer_type = ConsumerType.objects.get(name='INSTANCE')
    instance = Consumer.objects.get(consumer_type=consumer_type)
    untyped = Consumer.objects.get(consumer_type__isnull=True)
    # Every allocation is busy's: the instance's VCPU and memory, the untyped memory.
    allocations = set(Allocation.objects.values_list('pk', flat=True))
    assert len(allocations) == 3
    for model, query, expected in [
            (ResourceProvider, f'?traits__id__exact={trait.pk}', ['busy']),
            (ResourceProvider, f'?aggregates__id__exact={aggregate.pk}', ['busy']),
            (ResourceProvider, '?allocated=yes', ['busy']),
            (Consumer, f'?consumer_type={consumer_type.pk}', [instance.uuid]),
            (Consumer, f'?project__id__exact={Project.objects.get(external_id="proj").pk}',
             sorted([instance.uuid, untyped.uuid])),
            (Allocation, f'?resource_provider__id__exact={busy.pk}', sorted(allocations)),
            (Allocation, f'?consumer_type={consumer_type.pk}',
             sorted(instance.allocations.values_list('pk', flat=True)))]:
        response = admin_client.get(admin_url(model) + query)
        assert response.status_code == 200, query
        rows = list(response.context['cl'].result_list)
        if model is ResourceProvider:
            assert [p.name for p in rows] == expected, query
        elif model is Consumer:
            assert sorted(c.uuid for c in rows) == expected, query
        else:
            assert sorted(a.pk for a in rows) == expected, query
    response = admin_client.get(admin_url(ResourceProvider) + '?root=no')
    assert [p.name for p in response.context['cl'].result_list] == ['numa0']


def test_related_filters_offer_only_what_something_refers_to(admin_client, cloud):
    response = admin_client.get(admin_url(ResourceProvider))
    offered = {spec.title: [choice['display'] for choice in spec.choices(response.context['cl'])
                            if choice['display'] not in ('All', '-')]
               for spec in response.context['cl'].filter_specs}
    assert offered['traits'] == ['HW_CPU_X86_AVX2']  # not the unused CUSTOM_RACK1
    assert offered['aggregates'] == [AGGREGATE]
    assert set(offered['resource class']) == {'VCPU', 'MEMORY_MB', 'CUSTOM_GPU'}


def test_provider_list_shows_counts(admin_client, cloud):
    response = admin_client.get(admin_url(ResourceProvider))
    busy = next(p for p in response.context['cl'].result_list if p.name == 'busy')
    assert (busy.inventory_count, busy.trait_count, busy.aggregate_count) == (3, 1, 1)


def test_change_and_add_pages_render(admin_client, cloud):
    consumer = Consumer.objects.filter(consumer_type__isnull=False).get()
    pages = [
        admin_url(ResourceProvider, 'add'),
        admin_url(ResourceProvider, 'change', provider('busy').pk),
        admin_url(ResourceProvider, 'change', provider('numa0').pk),
        admin_url(ResourceClass, 'add'),
        admin_url(ResourceClass, 'change', 0),
        admin_url(ResourceClass, 'change', ResourceClass.objects.get(name='CUSTOM_GPU').pk),
        admin_url(Trait, 'add'),
        admin_url(Trait, 'change', Trait.objects.get(name='CUSTOM_RACK1').pk),
        admin_url(Aggregate, 'change', Aggregate.objects.get().pk),
        admin_url(Inventory, 'change', Inventory.objects.first().pk),
        admin_url(Consumer, 'change', consumer.pk),
        admin_url(Allocation, 'change', Allocation.objects.first().pk),
        admin_url(Project, 'change', consumer.project_id),
        admin_url(User, 'change', consumer.user_id),
        admin_url(ConsumerType, 'change', consumer.consumer_type_id),
        admin_url(Consumer, 'delete', consumer.pk),
        admin_url(ResourceProvider, 'delete', provider('spare').pk),
        reverse('admin:index'),
    ]
    for page in pages:
        assert admin_client.get(page).status_code == 200, page


def test_provider_page_shows_usage_and_members(admin_client, cloud):
    response = admin_client.get(admin_url(ResourceProvider, 'change', provider('busy').pk))
    inventories = response.context['inline_admin_formsets'][0].formset
    used = {form.instance.resource_class.name: form.instance.used for form in inventories.forms}
    assert used == {'VCPU': 6, 'MEMORY_MB': 1536, 'CUSTOM_GPU': 0}
    aggregate = Aggregate.objects.get()
    response = admin_client.get(admin_url(Aggregate, 'change', aggregate.pk))
    members = admin_client.get(link_named(response, '1 member provider(s)'))
    assert [p.name for p in members.context['cl'].result_list] == ['busy']
    assert link_named(response, 'pool dashboard') == reverse('ui:aggregate', args=[AGGREGATE])


def link_named(response, text):
    """The href of the page's one link reading `text`."""
    hrefs = re.findall(rf'<a href="([^"]*)">{re.escape(text)}</a>', response.content.decode())
    assert len(hrefs) == 1, (text, hrefs)
    return html.unescape(hrefs[0])


# ---- relations that grow with the cloud: a few rows, then a link ----------------------

def bulk_members(aggregate, count, name='member'):
    """`count` root providers, written in bulk, in `aggregate`."""
    members = ResourceProvider.objects.bulk_create([
        ResourceProvider(uuid=new_uuid(), name=f'{name}{i}') for i in range(count)])
    ResourceProvider.objects.filter(root_provider__isnull=True).update(root_provider_id=F('id'))
    ProviderAggregate.objects.bulk_create([
        ProviderAggregate(resource_provider_id=member.pk, aggregate=aggregate)
        for member in members])
    return members


def page_cost(client, url):
    """(bytes, queries) of the page at `url`, read a second time (the
    session and content types warm)."""
    client.get(url)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(response.content), len(captured)


def test_an_aggregate_of_ten_thousand_members_is_a_small_page(admin_client, db):
    """A 40,000-node cloud's pool: its page had every member inline
    (6,201 of them: 6.3 MB, 9.6-15 s). It links to them in the providers'
    paged list instead, and costs what a one-member aggregate's page does."""
    small, large = (Aggregate.objects.create(uuid=new_uuid()) for _ in range(2))
    bulk_members(small, 1, name='alone')
    bulk_members(large, 10_000)
    if connection.vendor == 'postgresql':
        # The statistics autovacuum takes after a load: planned with the
        # empty tables' ones, the members' list ran past the operator
        # budget (503) now and then.
        with connection.cursor() as cursor:
            cursor.execute('ANALYZE resource_providers, resource_provider_aggregates')
    small_bytes, small_queries = page_cost(admin_client, admin_url(Aggregate, 'change', small.pk))
    large_bytes, large_queries = page_cost(admin_client, admin_url(Aggregate, 'change', large.pk))
    assert large_bytes < 1_000_000 and large_bytes - small_bytes < 100
    assert large_queries == small_queries
    response = admin_client.get(admin_url(Aggregate, 'change', large.pk))
    members = admin_client.get(link_named(response, '10000 member provider(s)'))
    assert members.status_code == 200, (members.status_code, members.get('Location'))
    assert members.context['cl'].result_count == 10_000
    assert len(members.context['cl'].result_list) == members.context['cl'].list_per_page


def test_a_relation_longer_than_a_page_shows_its_first_rows_and_links_to_all(admin_client,
                                                                             api):
    """A provider's children and a consumer's allocations: the first
    twenty, then a link to the filtered list of every one; an event's
    providers: the first twenty, then how many."""
    parent = api.create_provider(name='chassis')['uuid']
    children = [api.create_provider(name=f'blade{i:02}', parent=parent)['uuid']
                for i in range(SHOWN + 5)]
    for child in children:
        api.set_inventory(child, {'VCPU': {'total': 4}})
    consumer = new_uuid()
    assert api.allocate(consumer, {child: {'VCPU': 1} for child in children}).status_code == 204

    response = admin_client.get(admin_url(ResourceProvider, 'change', provider('chassis').pk))
    shown = re.findall(r'<a href="[^"]*">(blade\d+)</a>', response.content.decode())
    assert shown == [f'blade{i:02}' for i in range(SHOWN)]
    every = admin_client.get(link_named(response, 'every child'))
    assert every.context['cl'].result_count == SHOWN + 5

    response = admin_client.get(admin_url(Consumer, 'change',
                                          Consumer.objects.get(uuid=consumer).pk))
    (allocations,) = response.context['inline_admin_formsets']
    assert len(allocations.formset.forms) == SHOWN
    every = admin_client.get(link_named(response, f'All {SHOWN + 5} allocations'))
    assert every.context['cl'].result_count == SHOWN + 5
    # The claim's event: the first providers, and how many it touched.
    event = Event.objects.get(consumer_uuid=consumer)
    response = admin_client.get(admin_url(Event, 'change', event.pk))
    (providers,) = response.context['inline_admin_formsets']
    assert len(providers.formset.forms) == SHOWN
    assert f'The first {SHOWN} of {SHOWN + 5}.' in response.content.decode()
    # As few rows as there are: no link.
    response = admin_client.get(admin_url(ResourceProvider, 'change', provider('blade00').pk))
    assert 'every child' not in response.content.decode()


def test_a_filter_of_more_choices_than_a_sidebar_holds_is_not_offered(admin_client, db):
    """A large cloud's aggregates (or projects) are no list to pick from;
    filtering by one still works, as the aggregate's page links to it."""
    aggregates = Aggregate.objects.bulk_create([
        Aggregate(uuid=new_uuid()) for _ in range(RelatedOnly.MAX_CHOICES + 1)])
    for index, aggregate in enumerate(aggregates):
        bulk_members(aggregate, 1, name=f'node{index}-')

    def offered():
        response = admin_client.get(admin_url(ResourceProvider))
        return [spec.title for spec in response.context['cl'].filter_specs if spec.has_output()]
    assert 'aggregates' not in offered()
    response = admin_client.get(admin_url(ResourceProvider),
                                {'aggregates__id__exact': aggregates[7].pk})
    assert [p.name for p in response.context['cl'].result_list] == ['node7-0']
    (shown,) = [spec for spec in response.context['cl'].filter_specs if spec.title == 'aggregates']
    assert [choice['display'] for choice in shown.choices(response.context['cl'])][0] == 'All'
    ProviderAggregate.objects.filter(aggregate=aggregates[0]).delete()
    assert 'aggregates' in offered()


# ---- every row reads in the domain's words ---------------------------------------------

def test_every_model_reads_in_its_own_words(cloud, api):
    """No "ProviderTrait object (36)": every model of ours says what its row
    is, in the admin's inlines, titles, filters and delete pages."""
    busy = provider('busy')
    pod_services.binding_bind(project_id='tenant', affinity='',
                              pod=pod_services.pod_create(name='pod1', affinity_tags={},
                                                          thresholds={}))
    call_command('snapshot_usage')
    services.pool_label_set(aggregate=Aggregate.objects.get(uuid=AGGREGATE), name='Gold')
    read = {model: str(model._default_manager.order_by('pk').first())
            for app in ('providers', 'allocations', 'pods')
            for model in apps.get_app_config(app).get_models()}
    missing = [model.__name__ for model, text in read.items() if text == 'None']
    assert missing == []
    default = [text for text in read.values() if re.search(r'object \(\d+\)', text)]
    assert default == []
    consumer = Consumer.objects.get(consumer_type__isnull=False).uuid
    assert read[ProviderTrait] == 'HW_CPU_X86_AVX2 on busy'
    assert read[ProviderAggregate] == f'busy in aggregate {AGGREGATE}'
    assert read[PoolLabel] == 'Gold'
    assert str(busy.inventories.get(resource_class__name='VCPU')) == 'VCPU on busy'
    assert str(Allocation.objects.get(consumer__uuid=consumer, resource_class__name='VCPU')) == \
        f'6 VCPU on busy for {consumer}'


# ---- refused edits change nothing -------------------------------------------------

def test_inventory_below_usage_is_saved_as_placement_does(admin_client, cloud):
    response = edit_provider(admin_client, 'busy', setting('VCPU', 'total', 4))
    assert response.status_code == 302, form_errors(response)
    provider = ResourceProvider.objects.get(name='busy')
    assert provider.inventories.get(resource_class__name='VCPU').total == 4


def test_an_inventory_below_its_usage_shows_as_over_capacity(admin_client, cloud):
    busy = ResourceProvider.objects.get(name='busy')
    services.inventory_update(provider=busy, resource_class='VCPU', record={'total': 4})
    response = admin_client.get(admin_url(ResourceProvider, 'change', busy.pk))
    inventories = response.context['inline_admin_formsets'][0]
    shown = {form.form.instance.resource_class.name: [
        str(field.contents()) for fieldset in form for line in fieldset for field in line
        if field.is_readonly] for form in inventories if form.form.instance.pk}
    assert shown['VCPU'] == ['6', '4 (over capacity)']
    assert shown['MEMORY_MB'][1] != '' and 'over' not in shown['MEMORY_MB'][1]


@pytest.mark.parametrize('field, value, capacity', [('total', 4, '4.0'), ('reserved', 3, '5.0')],
                         ids=['shrinking', 'reserving'])
def test_inventory_below_usage_is_refused_when_the_site_does(admin_client, cloud, settings,
                                                             field, value, capacity):
    settings.PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY = True
    errors = refused_edit(admin_client, 'busy', setting('VCPU', field, value))
    assert errors == [f"Inventory for 'VCPU' on resource provider '{cloud['busy']}' would leave "
                      f'its allocations over capacity: 6 used, capacity {capacity}.']


def test_deleting_inventory_in_use_is_refused(admin_client, cloud):
    errors = refused_edit(admin_client, 'busy', setting('VCPU', 'DELETE', 'on'))
    assert errors == [f"Inventory for 'VCPU' on resource provider '{cloud['busy']}' in use."]


def test_switching_the_class_of_inventory_in_use_is_refused(admin_client, cloud):
    errors = refused_edit(admin_client, 'busy',
                          setting('VCPU', 'resource_class', rc_id('DISK_GB')))
    assert errors == [f"Inventory for 'VCPU' on resource provider '{cloud['busy']}' in use."]


def test_inventory_out_of_bounds_is_refused(admin_client, cloud):
    def bad(data):
        add_row(data, INVENTORIES, resource_class=rc_id('DISK_GB'), total=0, reserved=0,
                min_unit=1, max_unit=100, step_size=1, allocation_ratio=1.0)

    errors = refused_edit(admin_client, 'busy', bad)
    assert errors == ['Ensure this value is greater than or equal to 1.']

    def reserved_over_total(data):
        data[inventory_key(data, 'MEMORY_MB', 'total')] = 10
        data[inventory_key(data, 'MEMORY_MB', 'reserved')] = 11

    errors = refused_edit(admin_client, 'busy', reserved_over_total)
    assert errors == [f"Invalid inventory for 'MEMORY_MB' on resource provider '{cloud['busy']}'. "
                      'The reserved value is greater than total.']


def test_inventory_refused_while_saving_is_an_error_message(admin_client, cloud, monkeypatch,
                                                            settings):
    """A change the form's check let through (another writer allocated
    meanwhile) is refused by the service: an error message, not a 500."""
    settings.PLACEMENT_REFUSE_OVERCOMMITTED_INVENTORY = True
    monkeypatch.setattr(InventoryFormSet, 'check', lambda self, provider, rows: None)

    def shrink(data):
        setting('VCPU', 'total', 4)(data)
        data['name'] = 'busy-renamed'

    with unchanged():
        response = edit_provider(admin_client, 'busy', shrink, follow=True)
        assert response.status_code == 200
        assert messages_of(response) == [
            f"Inventory for 'VCPU' on resource provider '{cloud['busy']}' would leave its "
            'allocations over capacity: 6 used, capacity 4.0.']


def test_a_stale_form_is_refused(admin_client, api, cloud, db_snapshot):
    """The form carries the generation the operator saw; a change made
    meanwhile is not overwritten."""
    url = admin_url(ResourceProvider, 'change', provider('busy').pk)
    data = form_data(admin_client.get(url))
    api.set_traits(cloud['busy'], ['HW_CPU_X86_AVX2', 'CUSTOM_RACK1'])
    before = db_snapshot()
    data[inventory_key(data, 'VCPU', 'total')] = 16
    errors = form_errors(admin_client.post(url, data))
    assert errors == ['Another thread concurrently updated the resource provider data. Please '
                      'retry your update (generation 5 when this page was loaded, 6 now): '
                      'reload the page.']
    assert db_snapshot() == before


def test_moving_a_provider_under_its_own_subtree_is_refused(admin_client, cloud):
    numa0 = provider('numa0').pk

    def loop(data):
        data['parent_provider'] = numa0

    errors = refused_edit(admin_client, 'parent', loop)
    assert errors == ['A provider cannot be moved under itself or one of its descendants.']


def test_a_duplicate_name_is_refused(admin_client, cloud, db_snapshot):
    before = db_snapshot()
    response = admin_client.post(admin_url(ResourceProvider, 'add'), {
        'name': 'busy', 'uuid': '',
        **{f'{p}-{k}': v for p in (INVENTORIES, TRAITS, AGGREGATES)
           for k, v in {'TOTAL_FORMS': 0, 'INITIAL_FORMS': 0}.items()}})
    assert form_errors(response) == ['Resource provider with this Name already exists.']
    assert db_snapshot() == before


# Why the admin will not delete the provider 'busy' or 'parent' of the cloud.
CANNOT_DELETE = {
    'busy': 'Cannot delete resource provider “busy”: Resource provider has allocations.',
    'parent': 'Cannot delete resource provider “parent”: Cannot delete resource provider that '
              'is a parent of another. Delete child providers first.',
}


@pytest.mark.parametrize('name', ['busy', 'parent'])
def test_deleting_a_provider_in_use_or_with_children_is_refused(admin_client, cloud,
                                                                db_snapshot, name):
    expected = CANNOT_DELETE[name]
    before = db_snapshot()
    url = admin_url(ResourceProvider, 'delete', provider(name).pk)
    for response in (admin_client.get(url, follow=True),
                     admin_client.post(url, {'post': 'yes'}, follow=True)):
        assert response.redirect_chain[-1][0] == admin_url(ResourceProvider, 'change',
                                                           provider(name).pk)
        assert messages_of(response) == [expected]
    assert db_snapshot() == before


@pytest.mark.parametrize('name', ['busy', 'parent'])
def test_bulk_delete_with_a_provider_in_use_or_with_children_deletes_nothing(
        admin_client, cloud, db_snapshot, name):
    expected = CANNOT_DELETE[name]
    before = db_snapshot()
    selected = [provider('spare'), provider(name)]
    for confirm in (False, True):
        response = delete_selected(admin_client, ResourceProvider, selected, confirm=confirm)
        assert response.status_code == 200
        assert messages_of(response) == [f'Nothing was deleted. {expected}']
    assert db_snapshot() == before


def test_bulk_delete_refused_while_deleting_is_an_error_message(admin_client, cloud, db_snapshot,
                                                                 monkeypatch):
    """Allocations made after the confirmation page: the service refuses."""
    monkeypatch.setattr(ResourceProviderAdmin, 'delete_refusal', lambda self, obj: None)
    before = db_snapshot()
    response = delete_selected(admin_client, ResourceProvider,
                               [provider('spare'), provider('busy')])
    assert messages_of(response) == [
        'Nothing was deleted. Cannot delete resource provider “busy”: '
        'Resource provider has allocations.']
    assert db_snapshot() == before


def assert_standard_name_kept(client, obj, new_name):
    """The change page of `obj`, a standard resource class or trait, offers
    no delete, and renaming it to `new_name` or deleting it is refused with
    a message. Returns the change page."""
    model, kind = type(obj), type(obj)._meta.verbose_name
    change = admin_url(model, 'change', obj.pk)
    page = client.get(change)
    assert page.context['has_delete_permission'] is False
    response = client.post(change, {'name': new_name}, follow=True)
    assert messages_of(response) == [f'Cannot update standard {kind} {obj.name}.']
    response = client.post(admin_url(model, 'delete', obj.pk), {'post': 'yes'}, follow=True)
    assert messages_of(response) == [
        f'Cannot delete {kind} “{obj.name}”: Cannot delete standard {kind} {obj.name}.']
    return page


def test_standard_resource_classes_are_read_only(admin_client, cloud, db_snapshot):
    before = db_snapshot()
    vcpu = ResourceClass.objects.get(name='VCPU')
    page = assert_standard_name_kept(admin_client, vcpu, 'CUSTOM_VCPU')
    assert page.context['has_change_permission'] is False
    response = delete_selected(admin_client, ResourceClass,
                               [vcpu, ResourceClass.objects.get(name='CUSTOM_GPU')])
    assert messages_of(response) == [
        'Nothing was deleted. Cannot delete resource class “VCPU”: '
        'Cannot delete standard resource class VCPU.']
    assert db_snapshot() == before


def test_standard_traits_are_read_only(admin_client, cloud, db_snapshot):
    before = db_snapshot()
    assert_standard_name_kept(admin_client, Trait.objects.get(name='COMPUTE_NODE'), 'CUSTOM_NODE')
    assert db_snapshot() == before


def test_custom_names_in_use_are_not_deleted(admin_client, api, cloud, db_snapshot):
    api.set_traits(cloud['busy'], ['HW_CPU_X86_AVX2', 'CUSTOM_RACK1'])
    before = db_snapshot()
    gpu = ResourceClass.objects.get(name='CUSTOM_GPU')
    response = admin_client.post(admin_url(ResourceClass, 'delete', gpu.pk), {'post': 'yes'},
                                 follow=True)
    assert messages_of(response) == [
        'Cannot delete resource class “CUSTOM_GPU”: Cannot delete resource class CUSTOM_GPU. '
        'Class is in use in inventory.']
    rack = Trait.objects.get(name='CUSTOM_RACK1')
    response = delete_selected(admin_client, Trait, [rack])
    assert messages_of(response) == [
        'Nothing was deleted. Cannot delete trait “CUSTOM_RACK1”: '
        'The trait CUSTOM_RACK1 is in use by a resource provider.']
    response = admin_client.post(change := admin_url(Trait, 'change', rack.pk),
                                 {'name': 'CUSTOM_RACK2'}, follow=True)
    assert messages_of(response) == [
        'Cannot rename trait CUSTOM_RACK1: create the new trait and delete this one.']
    assert response.redirect_chain[-1][0] == change
    assert db_snapshot() == before


def test_a_non_custom_name_is_refused(admin_client, cloud, db_snapshot):
    before = db_snapshot()
    for model in (ResourceClass, Trait):
        response = admin_client.post(admin_url(model, 'add'), {'name': 'GPU'})
        assert form_errors(response) == [
            'A custom name starts with CUSTOM_ and uses only A-Z, 0-9 and _.']
        response = admin_client.post(admin_url(model, 'add'), {'name': 'CUSTOM_GPU'
                                                               if model is ResourceClass
                                                               else 'CUSTOM_RACK1'})
        assert form_errors(response) == [
            f'{model._meta.verbose_name.capitalize()} with this Name already exists.']
    assert db_snapshot() == before


# ---- successful edits: through the services, as the API does them --------------------

def test_custom_resource_class_create_rename_delete(admin_client, api):
    response = admin_client.post(admin_url(ResourceClass, 'add'), {'name': 'CUSTOM_FPGA'})
    assert response.status_code == 302
    rc = ResourceClass.objects.get(name='CUSTOM_FPGA')
    assert rc.id == ResourceClass.MIN_CUSTOM_ID  # the first custom class, as in Placement
    assert api.get('/resource_classes/CUSTOM_FPGA').status_code == 200
    response = admin_client.post(admin_url(ResourceClass, 'change', rc.pk),
                                 {'name': 'CUSTOM_FPGA2'})
    assert response.status_code == 302
    assert api.get('/resource_classes/CUSTOM_FPGA2').status_code == 200
    renamed = ResourceClass.objects.get(pk=rc.pk)
    assert renamed.name == 'CUSTOM_FPGA2'
    assert renamed.updated_at >= renamed.created_at  # set by the rename (None before)
    response = admin_client.post(admin_url(ResourceClass, 'delete', rc.pk), {'post': 'yes'})
    assert response.status_code == 302
    assert api.get('/resource_classes/CUSTOM_FPGA2').status_code == 404


def test_custom_trait_create_and_delete(admin_client, api):
    response = admin_client.post(admin_url(Trait, 'add'), {'name': 'CUSTOM_RACK9'}, follow=True)
    assert messages_of(response) == ['The trait “CUSTOM_RACK9” was added successfully.']
    assert api.get('/traits/CUSTOM_RACK9').status_code == 204
    response = delete_selected(admin_client, Trait, [Trait.objects.get(name='CUSTOM_RACK9')])
    assert messages_of(response) == ['Successfully deleted 1 trait.']
    assert api.get('/traits/CUSTOM_RACK9').status_code == 404


def twins(api):
    """Two identical providers: one edited in the admin, one through the API."""
    return api.create_provider(name='by-admin')['uuid'], api.create_provider(name='by-api')['uuid']


def test_inventory_trait_and_aggregate_edits_bump_the_generation_as_the_api_does(admin_client,
                                                                                  api):
    by_admin, by_api = twins(api)
    vcpu, disk = rc_id('VCPU'), rc_id('DISK_GB')
    avx2 = Trait.objects.get(name='HW_CPU_X86_AVX2').pk

    edit_provider(admin_client, 'by-admin', lambda d: add_row(d, INVENTORIES, resource_class=vcpu,
                                                              total=8, reserved=0, min_unit=1,
                                                              max_unit=8, step_size=1,
                                                              allocation_ratio=16.0))
    api.set_inventory(by_api, {'VCPU': {'total': 8, 'max_unit': 8, 'allocation_ratio': 16.0}})
    assert generation(api, by_admin) == generation(api, by_api) == 1
    assert (api.get(f'/resource_providers/{by_admin}/inventories').body['inventories']
            == api.get(f'/resource_providers/{by_api}/inventories').body['inventories'])

    edit_provider(admin_client, 'by-admin', lambda d: add_row(d, TRAITS, trait=avx2))
    api.set_traits(by_api, ['HW_CPU_X86_AVX2'])
    assert generation(api, by_admin) == generation(api, by_api) == 2

    edit_provider(admin_client, 'by-admin',
                  lambda d: add_row(d, AGGREGATES, aggregate_uuid=AGGREGATE))
    api.set_aggregates(by_api, [AGGREGATE])
    assert generation(api, by_admin) == generation(api, by_api) == 3
    assert (api.get(f'/resource_providers/{by_admin}/aggregates').body['aggregates']
            == [AGGREGATE])

    def everything(data):
        data[f'{INVENTORIES}-0-total'] = 16
        add_row(data, INVENTORIES, resource_class=disk, total=100, reserved=0, min_unit=1,
                max_unit=2147483647, step_size=1, allocation_ratio=1.0)
        data[f'{TRAITS}-0-DELETE'] = 'on'
        data[f'{AGGREGATES}-0-aggregate_uuid'] = other = new_uuid()
        return other

    response = edit_provider(admin_client, 'by-admin', everything)
    assert response.status_code == 302, form_errors(response)
    api.set_inventory(by_api, {'VCPU': {'total': 16, 'max_unit': 8, 'allocation_ratio': 16.0},
                               'DISK_GB': {'total': 100}})
    api.set_traits(by_api, [])
    api.set_aggregates(by_api, [new_uuid()])
    assert generation(api, by_admin) == generation(api, by_api) == 6
    assert api.get(f'/resource_providers/{by_admin}/traits').body['traits'] == []

    # Renaming and an unchanged save bump nothing, as PUT /resource_providers/{uuid}.
    edit_provider(admin_client, 'by-admin', lambda d: d.update(name='by-admin-2'))
    api.put(f'/resource_providers/{by_api}', {'name': 'by-api-2'})
    edit_provider(admin_client, 'by-admin-2', lambda d: None)
    assert generation(api, by_admin) == generation(api, by_api) == 6
    assert api.get(f'/resource_providers/{by_admin}').body['name'] == 'by-admin-2'
    assert api.get(f'/resource_providers/{by_api}').body['name'] == 'by-api-2'


def test_inventory_delete_bumps_the_generation_as_the_api_does(admin_client, api, cloud):
    by_admin, by_api = twins(api)
    for rp in (by_admin, by_api):
        api.set_inventory(rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}})
    edit_provider(admin_client, 'by-admin', lambda d: d.update(
        {inventory_key(d, 'DISK_GB', 'DELETE'): 'on'}))
    assert api.delete(f'/resource_providers/{by_api}/inventories/DISK_GB').status_code == 204
    assert generation(api, by_admin) == generation(api, by_api) == 2
    assert list(api.get(f'/resource_providers/{by_admin}/inventories').body['inventories']) == [
        'VCPU']


def test_create_a_provider_with_inventory_in_a_tree(admin_client, api, cloud):
    rp_uuid = new_uuid()
    data = {'name': 'numa1', 'uuid': rp_uuid.upper(), 'parent_provider': provider('parent').pk}
    for prefix in (INVENTORIES, TRAITS, AGGREGATES):
        data.update({f'{prefix}-TOTAL_FORMS': 0, f'{prefix}-INITIAL_FORMS': 0})
    add_row(data, INVENTORIES, resource_class=rc_id('VCPU'), total=4, reserved=0, min_unit=1,
            max_unit=4, step_size=1, allocation_ratio=1.0)
    response = admin_client.post(admin_url(ResourceProvider, 'add'), data)
    assert response.status_code == 302, form_errors(response)
    body = api.get(f'/resource_providers/{rp_uuid}').body
    assert (body['uuid'], body['name'], body['generation']) == (rp_uuid, 'numa1', 1)
    assert body['parent_provider_uuid'] == body['root_provider_uuid'] == cloud['parent']
    assert api.get(f'/resource_providers/{rp_uuid}/inventories').body == {
        'resource_provider_generation': 1, 'inventories': {'VCPU': {
            'total': 4, 'reserved': 0, 'min_unit': 1, 'max_unit': 4, 'step_size': 1,
            'allocation_ratio': 1.0}}}

    response = admin_client.post(admin_url(ResourceProvider, 'add'), {**data, 'name': 'solo',
                                                                      'uuid': '',
                                                                      'parent_provider': ''})
    assert response.status_code == 302, form_errors(response)
    solo = provider('solo')
    assert solo.root_provider_id == solo.pk and solo.parent_provider_id is None
    assert str(uuid_lib.UUID(solo.uuid)) == solo.uuid  # generated, in canonical form


def test_reparenting_moves_the_subtree(admin_client, api, cloud):
    busy = provider('busy').pk
    response = edit_provider(admin_client, 'parent', lambda d: d.update(parent_provider=busy))
    assert response.status_code == 302, form_errors(response)
    for name in ('parent', 'numa0'):
        assert api.get(f'/resource_providers/{cloud[name]}').body['root_provider_uuid'] == \
            cloud['busy']
    response = edit_provider(admin_client, 'parent', lambda d: d.pop('parent_provider'))
    assert response.status_code == 302, form_errors(response)
    assert api.get(f'/resource_providers/{cloud["numa0"]}').body['root_provider_uuid'] == \
        cloud['parent']


def test_delete_providers(admin_client, api, cloud):
    response = admin_client.post(admin_url(ResourceProvider, 'delete', provider('spare').pk),
                                 {'post': 'yes'}, follow=True)
    assert messages_of(response) == ['The resource provider “spare” was deleted successfully.']
    response = delete_selected(admin_client, ResourceProvider, [provider('numa0')])
    assert messages_of(response) == ['Successfully deleted 1 resource provider.']
    assert api.get(f'/resource_providers/{cloud["numa0"]}').status_code == 404
    assert set(ResourceProvider.objects.values_list('name', flat=True)) == {'parent', 'busy'}


def test_deleting_a_consumer_deletes_its_allocations_as_the_api_does(admin_client, api, cloud):
    by_admin, by_api = twins(api)
    for rp in (by_admin, by_api):
        api.set_inventory(rp, {'VCPU': {'total': 8}})
    mine, theirs = new_uuid(), new_uuid()
    assert api.allocate(mine, {by_admin: {'VCPU': 2}}).status_code == 204
    assert api.allocate(theirs, {by_api: {'VCPU': 2}}).status_code == 204
    response = delete_selected(admin_client, Consumer, [Consumer.objects.get(uuid=mine)])
    assert messages_of(response) == ['Successfully deleted 1 consumer.']
    assert api.delete(f'/allocations/{theirs}').status_code == 204
    # Inventory (1), the allocation (2); freeing it bumps nothing, as in Placement.
    assert generation(api, by_admin) == generation(api, by_api) == 2
    assert api.get(f'/resource_providers/{by_admin}/usages').body['usages'] == {'VCPU': 0}
    assert not Consumer.objects.filter(uuid=mine).exists()

    consumer = Consumer.objects.get(consumer_type__name='INSTANCE')  # the cloud's, on busy
    response = admin_client.post(admin_url(Consumer, 'delete', consumer.pk), {'post': 'yes'},
                                 follow=True)
    assert messages_of(response) == [
        f'The consumer “{consumer.uuid}” was deleted successfully.']
    # The untyped consumer's memory stays.
    assert api.get(f'/resource_providers/{cloud["busy"]}/usages').body['usages'] == {
        'VCPU': 0, 'MEMORY_MB': 512, 'CUSTOM_GPU': 0}


def test_read_only_models_cannot_be_written(admin_client, cloud, db_snapshot):
    before = db_snapshot()
    allocation = Allocation.objects.first()
    assert admin_client.post(admin_url(Allocation, 'change', allocation.pk),
                             {'used': 1}).status_code == 403
    assert admin_client.post(admin_url(Allocation, 'delete', allocation.pk),
                             {'post': 'yes'}).status_code == 403
    assert admin_client.get(admin_url(Aggregate, 'add')).status_code == 403
    assert admin_client.get(admin_url(Consumer, 'add')).status_code == 403
    assert db_snapshot() == before


def test_an_admin_labels_a_pool_and_the_pool_goes_by_it(admin_client, cloud):
    aggregate = Aggregate.objects.get(uuid=AGGREGATE)
    page = admin_client.get(admin_url(Aggregate, 'change', aggregate.pk))
    assert link_named(page, 'label it') == (admin_url(PoolLabel, 'add')
                                            + f'?aggregate_uuid={AGGREGATE}')
    refused = admin_client.post(admin_url(PoolLabel, 'add'), {
        'aggregate_uuid': new_uuid(), 'name': 'Gold'})
    assert refused.context['adminform'].form.errors == {
        'aggregate_uuid': ['No aggregate with this uuid.']}
    admin_client.post(admin_url(PoolLabel, 'add'), {'aggregate_uuid': AGGREGATE, 'name': 'Gold'})
    assert Aggregate.objects.with_names().get(pk=aggregate.pk).name == 'Gold'
    page = admin_client.get(admin_url(Aggregate, 'change', aggregate.pk))
    assert f'<a href="{admin_url(PoolLabel, "change", aggregate.pk)}">Gold</a>' in \
        page.content.decode()
    admin_client.post(admin_url(PoolLabel, 'change', aggregate.pk), {'name': 'Silver'})
    assert PoolLabel.objects.get().name == 'Silver'
    admin_client.post(admin_url(PoolLabel, 'delete', aggregate.pk), {'post': 'yes'})
    assert not PoolLabel.objects.exists()
    assert Aggregate.objects.with_names().get(pk=aggregate.pk).name == AGGREGATE


# ---- a write the database aborted is rerun, as the API's are ---------------------------

def aborted(monkeypatch, owner, name, times=1):
    """`owner.name` (a service, or an admin's step) runs, then fails as a
    Galera node fails a transaction at commit (a retryable
    OperationalError), the first `times` times. Returns how often it ran."""
    real, runs = getattr(owner, name), []

    def first_aborted(*args, **kwargs):
        runs.append(1)
        done = real(*args, **kwargs)
        if len(runs) <= times:
            raise OperationalError('database is locked')
        return done
    monkeypatch.setattr(owner, name, first_aborted)
    return runs


# Where the save is aborted: in a service, or once the whole view has run
# (its success message queued), as a commit refused by the cluster.
ABORTED_IN = {'service': (services, 'inventories_replace'),
              'commit': (ResourceProviderAdmin, 'response_change')}


@pytest.mark.parametrize('where', list(ABORTED_IN))
def test_an_admin_save_the_database_aborted_is_rerun_once_whole(admin_client, cloud, api,
                                                                monkeypatch, where):
    runs = aborted(monkeypatch, *ABORTED_IN[where])
    before = generation(api, cloud['busy'])
    response = edit_provider(admin_client, 'busy', setting('MEMORY_MB', 'total', 8192),
                             follow=True)
    assert len(runs) == 2
    (message,) = messages_of(response)
    assert re.sub('<[^>]*>', '', message) == \
        'The resource provider “busy” was changed successfully.'
    assert generation(api, cloud['busy']) == before + 1   # the aborted run's bump rolled back
    assert provider('busy').inventories.get(resource_class__name='MEMORY_MB').total == 8192
    assert LogEntry.objects.filter(object_repr='busy').count() == 1


def test_an_admin_delete_the_database_aborted_is_rerun(admin_client, cloud, api, monkeypatch):
    runs = aborted(monkeypatch, allocation_services, 'allocations_delete')
    consumer = Consumer.objects.get(consumer_type__isnull=False)
    response = admin_client.post(admin_url(Consumer, 'delete', consumer.pk), {'post': 'yes'},
                                 follow=True)
    assert len(runs) == 2
    assert messages_of(response) == [f'The consumer “{consumer.uuid}” was deleted successfully.']
    assert not Consumer.objects.filter(pk=consumer.pk).exists()
    runs = aborted(monkeypatch, services, 'provider_delete')
    response = delete_selected(admin_client, ResourceProvider, [provider('spare')])
    assert len(runs) == 2
    assert messages_of(response) == ['Successfully deleted 1 resource provider.']
    assert not ResourceProvider.objects.filter(name='spare').exists()


def test_an_admin_save_aborted_every_time_changes_nothing(admin_client, cloud, monkeypatch):
    monkeypatch.setattr(retries, 'RETRY_SECONDS', 0)
    runs = aborted(monkeypatch, services, 'inventories_replace', times=99)
    with unchanged():
        response = edit_provider(admin_client, 'busy', setting('MEMORY_MB', 'total', 8192),
                                 follow=True)
    assert len(runs) == settings.PLACEMENT_RETRY_ATTEMPTS
    assert messages_of(response) == [
        'Another thread concurrently updated the data. Please retry your update']


# ---- no per-row queries --------------------------------------------------------------

def build_cloud(start, count):
    """Compute nodes with inventory, traits, aggregates, a NUMA child and a
    consumer each."""
    for i in range(start, start + count):
        root = services.provider_create(name=f'cn{i}')
        services.inventories_replace(provider=root, inventories={
            'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 4096}})
        services.traits_replace(provider=root, trait_names=['HW_CPU_X86_AVX2', 'COMPUTE_NODE'])
        services.aggregates_replace(provider=root, aggregate_uuids=[AGGREGATE, new_uuid()])
        numa = services.provider_create(name=f'cn{i}-numa0', parent_provider_uuid=root.uuid)
        services.inventories_replace(provider=numa, inventories={'VCPU': {'total': 8}})
        allocation_services.allocations_replace([allocation_services.ConsumerAllocations(
            consumer_uuid=new_uuid(), allocations={root.uuid: {'VCPU': 1, 'MEMORY_MB': 64}},
            project_id=f'project-{i}', user_id=f'user-{i}', generation=None,
            consumer_type='INSTANCE' if i % 2 else 'MIGRATION')])


def changelist_queries(client):
    counts = {}
    for model in (ResourceProvider, Inventory, ResourceClass, Trait, Aggregate, Consumer,
                  Allocation, Project, User, ConsumerType):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(admin_url(model))
        assert response.status_code == 200
        counts[model.__name__] = (len(captured), response.context['cl'].result_count)
    return counts


def test_changelist_queries_do_not_grow_with_rows(admin_client, db):
    build_cloud(0, 5)
    admin_client.get(admin_url(ResourceProvider))  # session and user warm
    few = changelist_queries(admin_client)
    build_cloud(5, 45)
    many = changelist_queries(admin_client)
    assert {name: queries for name, (queries, _) in few.items()} == \
        {name: queries for name, (queries, _) in many.items()}
    assert few['ResourceProvider'][1] == 10 and many['ResourceProvider'][1] == 100
    assert many['Consumer'][1] == 50


# ---- pods and pod bindings: written through providers.pods.services ---------------

POD_AGGREGATE = 'a907b3a5-4aba-478a-b4d6-3ed46d0c5e21'  # fixed: it names a test id
IN_USE = ('Cannot delete pod “Pod1”: Pod Pod1 has bindings, whose history is kept: put it '
          'into maintenance instead.')


@pytest.fixture
def pods(db):
    """Pod1 (general purpose, az1, VCPU 80%, aggregate POD_AGGREGATE) with
    tenant1 and tenant2 bound; Pod2 (resource=CAD, in maintenance) with
    tenant1's CAD binding ended and tenant3 bound; Pod3, nobody ever bound."""
    pod1 = pod_services.pod_create(name='Pod1', aggregate_uuid=POD_AGGREGATE,
                                   availability_zone='az1', thresholds={'VCPU': 80})
    pod2 = pod_services.pod_create(name='Pod2', affinity_tags={'resource': 'CAD'},
                                   state=Pod.MAINTENANCE)
    pod3 = pod_services.pod_create(name='Pod3')
    for project in ('tenant1', 'tenant2'):
        pod_services.binding_bind(project_id=project, pod=pod1)
    cad = pod_services.binding_bind(project_id='tenant1', affinity='resource=CAD', pod=pod2)
    pod_services.binding_end(binding=cad.binding)
    pod_services.binding_bind(project_id='tenant3', affinity='resource=CAD', pod=pod2)
    return {pod.name: pod for pod in (pod1, pod2, pod3)}


def pod(name):
    return Pod.objects.select_related('aggregate').get(name=name)


def bindings(**filters):
    """(project, affinity, pod, end reason) of bindings, oldest first."""
    return [(b.project_id, b.affinity, b.pod.name, b.end_reason)
            for b in PodBinding.objects.filter(**filters).select_related('pod').order_by('pk')]


def rows_of(client, model, query=''):
    response = client.get(admin_url(model) + query)
    assert response.status_code == 200, query
    return response, list(response.context['cl'].result_list)


def test_pod_changelist_shows_pools_tags_thresholds_and_tenants(admin_client, pods):
    response, rows = rows_of(admin_client, Pod)
    assert [(p.name, p.tenants) for p in rows] == [('Pod1', 2), ('Pod2', 1), ('Pod3', 0)]
    html = response.content.decode()
    assert f'href="{reverse("ui:aggregate", args=[POD_AGGREGATE])}"' in html
    assert 'resource=CAD' in html and 'VCPU 80%' in html
    # The tenant count sorts (column 7, after the selection checkbox).
    assert [p.name for p in rows_of(admin_client, Pod, '?o=-7')[1]] == ['Pod1', 'Pod2', 'Pod3']
    assert [p.name for p in rows_of(admin_client, Pod, '?o=7')[1]] == ['Pod3', 'Pod2', 'Pod1']
    for query, expected in [('?state__exact=maintenance', ['Pod2']),
                            ('?state__exact=enabled', ['Pod1', 'Pod3']),
                            ('?availability_zone=az1', ['Pod1']),
                            ('?availability_zone=nova', ['Pod2', 'Pod3']),
                            ('?q=Pod2', ['Pod2']), ('?q=' + POD_AGGREGATE[:13], ['Pod1']),
                            ('?q=' + pods['Pod3'].uuid, ['Pod3'])]:
        assert [p.name for p in rows_of(admin_client, Pod, query)[1]] == expected, query


def test_binding_changelist_newest_first_with_filters(admin_client, pods):
    response, rows = rows_of(admin_client, PodBinding)
    assert [(b.project_id, b.affinity, b.pod.name, b.end_reason) for b in rows] == [
        ('tenant3', 'resource=CAD', 'Pod2', None), ('tenant1', 'resource=CAD', 'Pod2', 'admin'),
        ('tenant2', '', 'Pod1', None), ('tenant1', '', 'Pod1', None)]
    assert 'general purpose' in response.content.decode()
    pod1 = pods['Pod1'].pk
    ended = PodBinding.objects.get(ended_at__isnull=False)
    for query, expected in [('?open=yes', ['tenant3', 'tenant2', 'tenant1']),
                            ('?open=no', ['tenant1']), ('?end_reason__exact=admin', ['tenant1']),
                            (f'?pod__id__exact={pod1}', ['tenant2', 'tenant1']),
                            (f'?pod__id__exact={pod1}&open=yes', ['tenant2', 'tenant1']),
                            ('?q=tenant1', ['tenant1', 'tenant1']),
                            ('?q=' + ended.uuid, ['tenant1'])]:
        rows = rows_of(admin_client, PodBinding, query)[1]
        assert [b.project_id for b in rows] == expected, query


def test_pod_and_binding_pages_render(admin_client, pods):
    binding = PodBinding.objects.first()
    for page in [admin_url(Pod, 'add'), admin_url(Pod, 'change', pods['Pod1'].pk),
                 admin_url(Pod, 'delete', pods['Pod3'].pk), admin_url(PodBinding, 'add'),
                 admin_url(PodBinding, 'change', binding.pk)]:
        assert admin_client.get(page).status_code == 200, page
    form = admin_client.get(admin_url(Pod, 'change', pods['Pod1'].pk)).context['adminform'].form
    assert (form['aggregate_uuid'].value(), form['thresholds'].value()) == (POD_AGGREGATE,
                                                                            'VCPU=80')
    form = admin_client.get(admin_url(Pod, 'change', pods['Pod2'].pk)).context['adminform'].form
    assert (form['affinity_tags'].value(), form['thresholds'].value()) == ('resource=CAD', '')


def pod_post(**fields):
    return {'name': 'Pod4', 'aggregate_uuid': '', 'availability_zone': 'nova',
            'affinity_tags': '', 'thresholds': '', 'state': 'enabled', **fields}


def test_add_a_pod_of_a_new_aggregate(admin_client, api, pods):
    aggregates = set(Aggregate.objects.values_list('uuid', flat=True))
    response = admin_client.post(admin_url(Pod, 'add'), pod_post(
        availability_zone='az2', affinity_tags='resource=CAD\n  gpu = a100:80gb \n\n',
        thresholds='VCPU=80\nMEMORY_MB = 92.5%\n'), follow=True)
    added = pod('Pod4')
    assert messages_of(response) == [
        f'The pod “<a href="{admin_url(Pod, "change", added.pk)}">Pod4</a>” was added '
        'successfully.']
    assert str(uuid_lib.UUID(added.uuid)) == added.uuid      # generated, in canonical form
    assert added.aggregate.uuid not in aggregates              # a new aggregate
    assert str(uuid_lib.UUID(added.aggregate.uuid)) == added.aggregate.uuid
    assert (added.availability_zone, added.affinity_tags, added.thresholds, added.state) == (
        'az2', {'resource': 'CAD', 'gpu': 'a100:80gb'}, {'VCPU': 80, 'MEMORY_MB': 92.5},
        'enabled')
    body = api.get(f'/pods/{added.uuid}').body
    assert (body['name'], body['aggregate'], body['thresholds'], body['tenants']) == (
        'Pod4', added.aggregate.uuid, {'VCPU': 80, 'MEMORY_MB': 92.5}, 0)


def test_add_a_pod_of_an_existing_aggregate(admin_client, api):
    rp = api.create_provider(name='cn1')['uuid']
    api.set_aggregates(rp, [AGGREGATE])
    response = admin_client.post(admin_url(Pod, 'add'), pod_post(aggregate_uuid=AGGREGATE,
                                                                  state='maintenance'))
    assert response.status_code == 302, form_errors(response)
    added = pod('Pod4')
    assert (added.aggregate.uuid, added.state) == (AGGREGATE, 'maintenance')
    assert Aggregate.objects.count() == 1
    response = admin_client.get(admin_url(Pod, 'change', added.pk))
    assert response.context['adminform'].form['aggregate_uuid'].value() == AGGREGATE


def edit_pod(client, name, change, **post):
    """Load the pod's change form, let `change` edit its data, post it."""
    url = admin_url(Pod, 'change', pod(name).pk)
    data = form_data(client.get(url))
    change(data)
    return client.post(url, data, **post)


def test_change_a_pod(admin_client, pods):
    other = new_uuid()

    def change(data):
        data.update(name='Pod1-renamed', aggregate_uuid=other, availability_zone='az9',
                    affinity_tags='resource=GPU', thresholds='VCPU=90\nDISK_GB=75',
                    state='maintenance')

    response = edit_pod(admin_client, 'Pod1', change)
    assert response.status_code == 302, form_errors(response)
    changed = pod('Pod1-renamed')
    assert (changed.uuid, changed.created_at) == (pods['Pod1'].uuid, pods['Pod1'].created_at)
    assert (changed.aggregate.uuid, changed.availability_zone, changed.affinity_tags,
            changed.thresholds, changed.state) == (other, 'az9', {'resource': 'GPU'},
                                                   {'VCPU': 90, 'DISK_GB': 75}, 'maintenance')
    assert changed.updated_at is not None
    assert Aggregate.objects.filter(uuid=POD_AGGREGATE).exists()   # the old one stays
    # Bindings are not touched: a tenant moves at its next request.
    assert bindings(pod__name='Pod1-renamed', ended_at__isnull=True) == [
        ('tenant1', '', 'Pod1-renamed', None), ('tenant2', '', 'Pod1-renamed', None)]


def test_an_unchanged_save_changes_nothing(admin_client, pods, db_snapshot):
    before = db_snapshot()
    response = edit_pod(admin_client, 'Pod1', lambda data: None)
    assert response.status_code == 302, form_errors(response)
    response = edit_pod(admin_client, 'Pod2', lambda data: data.update(
        affinity_tags=' resource = CAD '))
    assert response.status_code == 302, form_errors(response)
    assert db_snapshot() == before     # not even updated_at


BAD_POD_FIELDS = [
    ({'affinity_tags': 'resource CAD'}, '“resource CAD”: write one key=value per line.'),
    ({'affinity_tags': 'res ource=CAD'},
     '“res ource=CAD”: keys are 1 to 64 letters, digits or _ . : / -'),
    ({'affinity_tags': 'resource=C=AD'},
     '“resource=C=AD”: values are 1 to 64 letters, digits, spaces (not at either end) or '
     "_ . : / ( ) + , ; & # @ ! ? % * ' [ ] -"),
    ({'affinity_tags': 'resource=CAD\nresource=GPU'}, '“resource” is given twice.'),
    ({'affinity_tags': '\n'.join(f'k{i}=v' for i in range(17))},
     'A pod has at most 16 affinity tags.'),
    ({'thresholds': 'CUSTOM_NOPE=50'}, 'No such resource class CUSTOM_NOPE.'),
    ({'thresholds': 'vcpu=50'}, '“vcpu”: a resource class name uses only A-Z, 0-9 and _.'),
    ({'thresholds': 'VCPU=0'},
     '“VCPU=0”: a threshold is a percentage above 0 and at most 100.'),
    ({'thresholds': 'VCPU=150'},
     '“VCPU=150”: a threshold is a percentage above 0 and at most 100.'),
    ({'thresholds': 'VCPU=nan'},
     '“VCPU=nan”: a threshold is a percentage above 0 and at most 100.'),
    ({'name': 'Pod2'}, 'Pod with this Name already exists.'),
    ({'aggregate_uuid': POD_AGGREGATE}, f'Aggregate {POD_AGGREGATE} is already the pod Pod1.'),
    ({'aggregate_uuid': 'not-a-uuid'}, 'Enter a valid UUID.'),
    ({'state': 'retired'},
     'Select a valid choice. retired is not one of the available choices.'),
]


@pytest.mark.parametrize('fields,error', BAD_POD_FIELDS, ids=lambda v: str(v)[:40])
def test_a_bad_pod_is_refused_and_changes_nothing(admin_client, pods, db_snapshot, fields,
                                                  error):
    before = db_snapshot()
    response = admin_client.post(admin_url(Pod, 'add'), pod_post(**fields))
    assert form_errors(response) == [error]
    # The same on Pod3's change form (its own name and aggregate are no clash).
    response = edit_pod(admin_client, 'Pod3', lambda data: data.update(fields))
    assert form_errors(response) == [error]
    assert db_snapshot() == before


def test_a_pod_keeps_an_aggregate(admin_client, pods, db_snapshot):
    before = db_snapshot()
    response = edit_pod(admin_client, 'Pod3', lambda data: data.update(aggregate_uuid=''))
    assert form_errors(response) == ['This field is required.']
    assert db_snapshot() == before


def test_a_pod_refused_while_saving_is_an_error_message(admin_client, pods, db_snapshot,
                                                        monkeypatch):
    """The aggregate became another pod's after the form's check: the
    service refuses, an error message, and nothing changes."""
    monkeypatch.setattr(PodForm, 'clean_aggregate_uuid',
                        lambda self: self.cleaned_data['aggregate_uuid'] or None)
    before = db_snapshot()
    response = admin_client.post(admin_url(Pod, 'add'), pod_post(aggregate_uuid=POD_AGGREGATE),
                                 follow=True)
    assert messages_of(response) == [f'Aggregate {POD_AGGREGATE} is already the pod Pod1.']
    response = edit_pod(admin_client, 'Pod3', lambda data: data.update(
        name='Pod3-renamed', aggregate_uuid=POD_AGGREGATE), follow=True)
    assert messages_of(response) == [f'Aggregate {POD_AGGREGATE} is already the pod Pod1.']
    assert db_snapshot() == before


def test_a_pod_with_bindings_is_never_deleted(admin_client, pods, db_snapshot):
    before = db_snapshot()
    url = admin_url(Pod, 'delete', pods['Pod1'].pk)
    for response in (admin_client.get(url, follow=True),
                     admin_client.post(url, {'post': 'yes'}, follow=True)):
        assert response.redirect_chain[-1][0] == admin_url(Pod, 'change', pods['Pod1'].pk)
        assert messages_of(response) == [IN_USE]
    for confirm in (False, True):
        response = delete_selected(admin_client, Pod, [pods['Pod3'], pods['Pod1']],
                                   confirm=confirm)
        assert messages_of(response) == [f'Nothing was deleted. {IN_USE}']
    assert db_snapshot() == before


def test_a_pod_without_bindings_is_deleted(admin_client, api, pods):
    response = admin_client.post(admin_url(Pod, 'delete', pods['Pod3'].pk), {'post': 'yes'},
                                 follow=True)
    assert messages_of(response) == ['The pod “Pod3” was deleted successfully.']
    assert api.get(f'/pods/{pods["Pod3"].uuid}').status_code == 404
    assert Aggregate.objects.filter(pk=pods['Pod3'].aggregate_id).exists()  # the pool stays
    assert set(Pod.objects.values_list('name', flat=True)) == {'Pod1', 'Pod2'}


def test_an_explicit_binding_ends_the_open_one(admin_client, pods, db_snapshot):
    response = admin_client.post(admin_url(PodBinding, 'add'), {
        'project_id': 'tenant1', 'affinity': '', 'pod': pods['Pod3'].pk}, follow=True)
    assert response.redirect_chain[-1][0] == admin_url(PodBinding)
    assert messages_of(response) == ['Project tenant1 is bound to pod Pod3 for general-purpose '
                                     'work; its binding to pod Pod1 ended (admin).']
    assert bindings(project_id='tenant1', affinity='') == [
        ('tenant1', '', 'Pod1', 'admin'), ('tenant1', '', 'Pod3', None)]
    # A new tenant, a tagged affinity: nothing to end.
    response = admin_client.post(admin_url(PodBinding, 'add'), {
        'project_id': 'tenant9', 'affinity': 'resource=CAD', 'pod': pods['Pod2'].pk},
        follow=True)
    assert messages_of(response) == [
        'Project tenant9 is bound to pod Pod2 for resource=CAD work.']
    assert bindings(project_id='tenant9') == [('tenant9', 'resource=CAD', 'Pod2', None)]
    # Bound there already: nothing changes.
    before = db_snapshot()
    response = admin_client.post(admin_url(PodBinding, 'add'), {
        'project_id': 'tenant1', 'affinity': '', 'pod': pods['Pod3'].pk}, follow=True)
    assert messages_of(response) == ['Project tenant1 was already bound to pod Pod3 for '
                                     'general-purpose work: nothing changed.']
    assert db_snapshot() == before


@pytest.mark.parametrize('affinity,pod_name,error', [
    ('resource=CAD', 'Pod1', 'Pod Pod1 does not serve resource=CAD work.'),
    ('', 'Pod2', 'Pod Pod2 does not serve general-purpose work.'),
    ('resource=GPU', 'Pod2', 'Pod Pod2 does not serve resource=GPU work.'),
    ('resource', 'Pod2', 'An affinity tag is key=value (resource=CAD): 1 to 64 letters, '
                         'digits or _ . : / - each side.'),
])
def test_an_explicit_binding_to_a_pod_not_serving_the_affinity_is_refused(
        admin_client, pods, db_snapshot, affinity, pod_name, error):
    before = db_snapshot()
    response = admin_client.post(admin_url(PodBinding, 'add'), {
        'project_id': 'tenant1', 'affinity': affinity, 'pod': pods[pod_name].pk})
    assert form_errors(response) == [error]
    assert db_snapshot() == before


def end_selected(client, objs):
    return client.post(admin_url(PodBinding), {
        'action': 'end_bindings', '_selected_action': [obj.pk for obj in objs]}, follow=True)


def test_the_end_action_ends_bindings_as_the_admin(admin_client, pods):
    selected = list(PodBinding.objects.filter(project_id__in=['tenant2', 'tenant3']))
    response = end_selected(admin_client, selected)
    assert messages_of(response) == ['Ended 2 binding(s) (admin).']
    assert bindings(project_id__in=['tenant2', 'tenant3']) == [
        ('tenant2', '', 'Pod1', 'admin'), ('tenant3', 'resource=CAD', 'Pod2', 'admin')]
    assert all(b.ended_at >= b.started_at for b in selected
               for b in [PodBinding.objects.get(pk=b.pk)])
    response, rows = rows_of(admin_client, Pod)
    assert [(p.name, p.tenants) for p in rows] == [('Pod1', 1), ('Pod2', 0), ('Pod3', 0)]


def test_the_end_action_with_an_ended_binding_ends_nothing(admin_client, pods, db_snapshot):
    before = db_snapshot()
    ended = PodBinding.objects.get(ended_at__isnull=False)
    response = end_selected(admin_client, [*PodBinding.objects.filter(ended_at__isnull=True),
                                           ended])
    assert messages_of(response) == [
        f'Nothing was ended. Pod binding {ended.uuid} already ended at '
        f'{ended.ended_at.isoformat()} (admin).']
    assert db_snapshot() == before


def test_the_end_action_refused_while_ending_ends_nothing(admin_client, pods, db_snapshot,
                                                          monkeypatch):
    """A binding ended by someone else after the action read it: the
    service refuses it, and the bindings ended before it are ended no more."""
    monkeypatch.setattr(PodBinding, 'is_open', property(lambda binding: True))
    before = db_snapshot()
    ended = PodBinding.objects.get(ended_at__isnull=False)
    selected = list(PodBinding.objects.order_by('pk'))
    assert selected.index(ended) == 2     # two open ones are ended first
    response = end_selected(admin_client, selected)
    assert messages_of(response) == [
        f'Nothing was ended. Pod binding {ended.uuid} already ended at '
        f'{ended.ended_at.isoformat()} (admin).']
    assert db_snapshot() == before


def test_bindings_are_never_changed_or_deleted(admin_client, pods, db_snapshot):
    before = db_snapshot()
    binding = PodBinding.objects.filter(ended_at__isnull=True).first()
    response = admin_client.get(admin_url(PodBinding, 'change', binding.pk))
    assert response.context['has_change_permission'] is False
    assert response.context['has_delete_permission'] is False
    assert admin_client.post(admin_url(PodBinding, 'change', binding.pk), {
        'project_id': 'other', 'pod': pods['Pod3'].pk}).status_code == 403
    assert admin_client.post(admin_url(PodBinding, 'delete', binding.pk),
                             {'post': 'yes'}).status_code == 403
    actions = admin_client.get(admin_url(PodBinding)).context['action_form']
    assert [name for name, _ in actions.fields['action'].choices if name] == ['end_bindings']
    response = delete_selected(admin_client, PodBinding, [binding])
    assert messages_of(response) == ['No action selected.']
    assert db_snapshot() == before


# ---- no per-row queries on the pod pages ----------------------------------------------

def build_pods(start, count):
    """Pods, every other one tagged, each with two tenants bound and one
    of them moved away since (history)."""
    for i in range(start, start + count):
        tags = {'resource': f'R{i}'} if i % 2 else {}
        affinity = f'resource=R{i}' if tags else ''
        built = pod_services.pod_create(name=f'pod{i}', affinity_tags=tags,
                                        thresholds={'VCPU': 80, 'MEMORY_MB': 90},
                                        availability_zone=f'az{i % 3}')
        for tenant in range(2):
            pod_services.binding_bind(project_id=f'tenant{i}-{tenant}', affinity=affinity,
                                      pod=built)
        pod_services.binding_end(binding=PodBinding.objects.filter(pod=built).first())


def pod_page_queries(client):
    first_pod = Pod.objects.order_by('pk').first()
    first_binding = PodBinding.objects.order_by('pk').first()
    counts = {}
    for name, url in [('pods', admin_url(Pod)), ('pods by tenants', admin_url(Pod) + '?o=-7'),
                      ('bindings', admin_url(PodBinding)),
                      ('open bindings', admin_url(PodBinding) + '?open=yes'),
                      ('pod', admin_url(Pod, 'change', first_pod.pk)),
                      ('add pod', admin_url(Pod, 'add')),
                      ('binding', admin_url(PodBinding, 'change', first_binding.pk)),
                      ('add binding', admin_url(PodBinding, 'add'))]:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200, url
        cl = response.context.get('cl')
        counts[name] = (len(captured), cl.result_count if cl else None)
    return counts


def test_pod_pages_queries_do_not_grow_with_rows(admin_client, db):
    build_pods(0, 2)
    pod_page_queries(admin_client)  # session, user and content types warm
    few = pod_page_queries(admin_client)
    build_pods(2, 18)
    many = pod_page_queries(admin_client)
    assert {name: queries for name, (queries, _) in few.items()} == \
        {name: queries for name, (queries, _) in many.items()}
    assert (few['pods'][1], many['pods'][1]) == (2, 20)
    assert (few['bindings'][1], many['bindings'][1]) == (4, 40)
    assert (few['open bindings'][1], many['open bindings'][1]) == (2, 20)


# ---- searching consumers without joining their owners to every consumer -------------

def searched(client, model, words):
    response = client.get(admin_url(model), {'q': words})
    assert response.status_code == 200, words
    return sorted(str(row) for row in response.context['cl'].result_list)


def test_consumers_are_searched_by_uuid_and_by_their_owners_ids(admin_client, cloud):
    instance = Consumer.objects.get(consumer_type__isnull=False)
    untyped = Consumer.objects.get(consumer_type__isnull=True)
    both = sorted([instance.uuid, untyped.uuid])
    owned = allocation_services.ConsumerAllocations(
        consumer_uuid=new_uuid(), allocations={provider('busy').uuid: {'VCPU': 1}},
        project_id='other-team', user_id='Carol', generation=None)
    allocation_services.allocations_replace([owned])
    for words, expected in [
            (instance.uuid, [instance.uuid]),                 # a whole uuid, by its index
            (instance.uuid.upper(), [instance.uuid]),
            (f'"{instance.uuid}"', [instance.uuid]),
            (instance.uuid[4:20], [instance.uuid]),           # part of one
            (instance.uuid + '0', []),                        # longer than any uuid
            ('proj', both), ('PROJ', both), ('USE', both),    # part of a project's, a user's id
            ('team', [owned.consumer_uuid]), ('carol', [owned.consumer_uuid]),
            (f'proj {untyped.uuid[:8]}', [untyped.uuid]),      # every word
            ('nobody', [])]:
        assert searched(admin_client, Consumer, words) == expected, words
    # A search says how many match, not also how many there are.
    response = admin_client.get(admin_url(Consumer), {'q': 'proj'})
    assert response.context['cl'].full_result_count is None
    assert 'Show all' in response.content.decode()


def test_a_consumer_found_by_uuid_costs_no_scan_of_the_consumers(admin_client, cloud):
    instance = Consumer.objects.get(consumer_type__isnull=False)
    with CaptureQueriesContext(connection) as captured:
        assert searched(admin_client, Consumer, instance.uuid) == [instance.uuid]
    quoted = connection.ops.quote_name  # MariaDB quotes with backticks
    from_consumers = f'FROM {quoted("consumers")}'
    (counted,) = [q['sql'] for q in captured if q['sql'].startswith(
        f'SELECT COUNT(*) AS {quoted("__count")} {from_consumers}')]
    assert 'LIKE' not in counted and 'JOIN' not in counted
    assert not any('LIKE' in q['sql'] for q in captured if from_consumers in q['sql'])
