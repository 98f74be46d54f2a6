"""Names, traits, classes and ids compare byte for byte on every database:
case, trailing spaces, accents and characters outside the Basic Multilingual
Plane make different names, as on PostgreSQL (MySQL's default collations
would fold them: placement_site/mysql.py gives our tables a binary one).
What does not fit a column is a 400, never a truncation or a 500."""
from urllib.parse import quote

import pytest
from django.apps import apps
from django.db import connection

from providers.models import ResourceProvider
from tests.support.api import assert_error
from tests.support.api import new_uuid

LOOK_ALIKES = ['cn1', 'CN1', 'cn1 ', 'cñ1', 'cn1\N{GRINNING FACE}']


def test_provider_names_differing_in_case_spaces_or_accents_are_distinct(api):
    made = {name: api.create_provider(name)['uuid'] for name in LOOK_ALIKES}
    for name, uuid in made.items():
        answer = api.get(f'/resource_providers?name={quote(name)}').body['resource_providers']
        assert [(p['name'], p['uuid']) for p in answer] == [(name, uuid)]
    # The same name again is the one conflict.
    response = api.post('/resource_providers', {'name': 'cn1 ', 'uuid': new_uuid()})
    assert_error(response, 409, 'Conflicting resource provider name: cn1  already exists.',
                 code='placement.duplicate_name')


def test_custom_traits_and_classes_are_case_sensitive(api):
    assert api.put('/traits/CUSTOM_GOLD').status_code == 201
    # Trait and class names are upper case by grammar: a lower-case twin is
    # refused by the schema, never found as the upper-case one.
    assert api.get('/traits/CUSTOM_GOLD').status_code == 204
    assert api.get('/traits/custom_gold').status_code == 404
    assert api.put('/resource_classes/CUSTOM_GOLD').status_code == 201
    assert api.get('/resource_classes/custom_gold').status_code == 404


def test_project_and_user_ids_differing_in_case_are_two_projects(api):
    rp = api.create_provider('exact-projects')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 8}})
    assert api.allocate(new_uuid(), {rp: {'VCPU': 1}}, project='Tenant').status_code == 204
    assert api.allocate(new_uuid(), {rp: {'VCPU': 2}}, project='tenant').status_code == 204
    assert api.get('/usages?project_id=Tenant', version='1.9').body['usages'] == {'VCPU': 1}
    assert api.get('/usages?project_id=tenant', version='1.9').body['usages'] == {'VCPU': 2}
    assert api.get('/usages?project_id=tenant%20', version='1.9').body['usages'] == {}


def test_a_name_too_long_for_its_column_is_a_400(api, db_snapshot):
    before = db_snapshot()
    response = api.post('/resource_providers', {'name': 'x' * 201, 'uuid': new_uuid()})
    assert_error(response, 400, 'is too long')
    # 200 characters of four bytes each fit, as they do on PostgreSQL.
    assert db_snapshot() == before
    assert api.create_provider('\N{GRINNING FACE}' * 200)['name'] == '\N{GRINNING FACE}' * 200


def test_searches_that_say_so_still_fold_case(api):
    """The dashboards' "name contains" and the admin's searches ignore case,
    as on PostgreSQL, though the names themselves compare exactly."""
    for name in LOOK_ALIKES:
        api.create_provider(name)
    providers = ResourceProvider.objects.order_by('name')
    assert list(providers.filter(name__icontains='N1').values_list('name', flat=True)) == [
        'CN1', 'cn1', 'cn1 ', 'cn1\N{GRINNING FACE}']
    assert list(providers.filter(name__iexact='Cn1').values_list('name', flat=True)) == [
        'CN1', 'cn1']
    assert providers.filter(name__istartswith='cn1 ').count() == 1
    assert providers.filter(name__exact='Cn1').count() == 0


@pytest.mark.skipif(connection.vendor != 'mysql', reason='MySQL/MariaDB collations')
def test_every_text_column_of_our_tables_is_binary(db):
    tables = {model._meta.db_table for label in ('providers', 'allocations', 'pods')
              for model in apps.get_app_config(label).get_models(include_auto_created=True)}
    with connection.cursor() as cursor:
        cursor.execute('SELECT table_name, column_name, collation_name '
                       'FROM information_schema.columns WHERE table_schema = DATABASE() '
                       'AND collation_name IS NOT NULL')
        collations = {(table, column): collation for table, column, collation in cursor.fetchall()
                      if table in tables}
    assert collations
    assert {key: c for key, c in collations.items() if c not in (
        'utf8mb4_nopad_bin', 'utf8mb4_0900_bin')} == {}
