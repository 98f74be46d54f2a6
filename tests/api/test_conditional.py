"""ETag, If-Match and If-None-Match (placement_site.conditional) on a
provider, its inventories, traits and aggregates, and a consumer's
allocations: 304 without a body while unchanged, 412 in Placement's error
format that changes nothing when stale, the body's generation optional
with If-Match, and racing writers: one wins, the others get 412."""
import uuid

import os_traits
import pytest
import requests

from tests.support.api import assert_error
from tests.support.api import new_uuid
from tests.support.concurrency import HEADERS
from tests.support.concurrency import together
from tests.support.state import unchanged

CONCURRENT_UPDATE = 'placement.concurrent_update'


def rp_path(rp, part=''):
    return f'/resource_providers/{rp}{part}'


@pytest.fixture
def rp(api):
    rp = api.create_provider(name='cn-etag')['uuid']
    api.set_inventory(rp, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}})
    api.put('/traits/CUSTOM_GOLD')
    return rp


@pytest.fixture
def consumer(api, rp):
    consumer = new_uuid()
    assert api.allocate(consumer, {rp: {'VCPU': 2}}).status_code == 204
    return consumer


def etag_of(api, path, **kwargs):
    response = api.get(path, **kwargs)
    assert response.status_code == 200, response.content
    tag = response['ETag']
    assert tag.startswith('"') and tag.endswith('"') and not tag.startswith('W/')
    return tag


def assert_precondition_failed(response, code=CONCURRENT_UPDATE):
    error = assert_error(response, 412, code=code)
    assert error['detail'].startswith('Request precondition failed.\n\n ')
    return error


# Each resource: its path, and a write with If-Match (what to PUT) that
# leaves it changed.
WRITES = {
    'provider': ('', lambda api, path, headers: api.put(
        path, {'name': 'cn-renamed'}, headers=headers)),
    'inventories': ('/inventories', lambda api, path, headers: api.put(
        path, {'inventories': {'VCPU': {'total': 16}}}, headers=headers)),
    'inventory': ('/inventories/VCPU', lambda api, path, headers: api.put(
        path, {'total': 12}, headers=headers)),
    'traits': ('/traits', lambda api, path, headers: api.put(
        path, {'traits': ['CUSTOM_GOLD']}, headers=headers)),
    'aggregates': ('/aggregates', lambda api, path, headers: api.put(
        path, {'aggregates': [new_uuid()]}, headers=headers)),
}


# ---- ETag ----------------------------------------------------------------------------

@pytest.mark.parametrize('part', ['', '/inventories', '/inventories/VCPU', '/traits',
                                  '/aggregates'])
def test_etag_is_stable_across_reads_and_microversions(api, rp, part):
    tag = etag_of(api, rp_path(rp, part))
    assert etag_of(api, rp_path(rp, part)) == tag
    assert etag_of(api, rp_path(rp, part), version='1.19') == tag


@pytest.mark.parametrize('resource', sorted(WRITES))
def test_a_write_answers_the_etag_the_next_read_gives(api, rp, resource):
    part, write = WRITES[resource]
    before = etag_of(api, rp_path(rp, part))
    response = write(api, rp_path(rp, part), {'If-Match': before})
    assert response.status_code == 200, response.content
    assert response['ETag'] != before
    assert response['ETag'] == etag_of(api, rp_path(rp, part))


def test_every_change_of_what_a_provider_answer_shows_changes_its_etag(api, rp):
    tag = etag_of(api, rp_path(rp))
    # A rename leaves the generation alone (as in Placement), not the ETag.
    generation = api.get(rp_path(rp)).body['generation']
    assert api.put(rp_path(rp), {'name': 'other-name'}).status_code == 200
    assert api.get(rp_path(rp)).body['generation'] == generation
    renamed = etag_of(api, rp_path(rp))
    assert renamed != tag
    # So does a new parent.
    parent = api.create_provider(name='parent')['uuid']
    assert api.put(rp_path(rp), {'name': 'other-name', 'parent_provider_uuid': parent},
                   ).status_code == 200
    assert etag_of(api, rp_path(rp)) != renamed


def test_aggregates_before_1_19_change_their_etag_without_a_generation(api, rp):
    path = rp_path(rp, '/aggregates')
    tag = etag_of(api, path, version='1.1')
    generation = api.get(rp_path(rp)).body['generation']
    assert api.put(path, [new_uuid()], version='1.1').status_code == 200
    assert api.get(rp_path(rp)).body['generation'] == generation
    assert etag_of(api, path, version='1.1') != tag


def test_writes_without_a_body_answer_the_new_etag(api, rp):
    response = api.delete(rp_path(rp, '/traits'))
    assert response.status_code == 204
    assert response['ETag'] == etag_of(api, rp_path(rp, '/traits'))
    response = api.delete(rp_path(rp, '/inventories/MEMORY_MB'))
    assert response.status_code == 204
    assert response['ETag'] == etag_of(api, rp_path(rp, '/inventories'))


def test_inventories_share_the_generations_etag(api, rp):
    # The generation guards all of them, as the body's generation does.
    assert (etag_of(api, rp_path(rp, '/inventories'))
            == etag_of(api, rp_path(rp, '/inventories/VCPU'))
            == etag_of(api, rp_path(rp, '/traits')))


def test_consumer_allocations_etag_follows_its_generation(api, rp, consumer):
    path = f'/allocations/{consumer}'
    tag = etag_of(api, path)
    # Another consumer's claim bumps the provider's generation, not this one's.
    assert api.allocate(new_uuid(), {rp: {'VCPU': 1}}).status_code == 204
    assert etag_of(api, path) == tag
    response = api.allocate(consumer, {rp: {'VCPU': 3}}, generation=1)
    assert response.status_code == 204, response.content
    assert response['ETag'] == etag_of(api, path) != tag


def test_a_consumer_without_allocations_has_no_etag(api):
    # For preconditions it does not exist: If-None-Match: * creates it only if new.
    response = api.get(f'/allocations/{new_uuid()}', headers={'If-None-Match': '*'})
    assert response.status_code == 200
    assert response.body == {'allocations': {}}
    assert not response.has_header('ETag')


# ---- If-None-Match ------------------------------------------------------------------

@pytest.mark.parametrize('part', ['', '/inventories', '/inventories/VCPU', '/traits',
                                  '/aggregates'])
def test_if_none_match_answers_304_without_a_body_while_unchanged(api, rp, part):
    path = rp_path(rp, part)
    tag = etag_of(api, path)
    for header in (tag, f'W/{tag}', f'"other", {tag}', '*'):
        response = api.get(path, headers={'If-None-Match': header})
        assert response.status_code == 304, header
        assert response.content == b''
        assert not response.has_header('Content-Type')
        assert response['ETag'] == tag
        assert response['Cache-Control'] == 'no-cache'
    assert api.get(path, headers={'If-None-Match': '"other"'}).status_code == 200


def test_if_none_match_reads_the_new_state_after_a_write(api, rp):
    path = rp_path(rp, '/traits')
    tag = etag_of(api, path)
    api.set_traits(rp, ['CUSTOM_GOLD'])
    response = api.get(path, headers={'If-None-Match': tag})
    assert response.status_code == 200
    assert response.body['traits'] == ['CUSTOM_GOLD']


def test_if_none_match_on_consumer_allocations(api, consumer):
    tag = etag_of(api, f'/allocations/{consumer}')
    response = api.get(f'/allocations/{consumer}', headers={'If-None-Match': tag})
    assert (response.status_code, response.content) == (304, b'')


def test_before_1_15_a_304_has_no_cache_headers_either(api, rp):
    tag = etag_of(api, rp_path(rp), version='1.14')
    response = api.get(rp_path(rp), version='1.14', headers={'If-None-Match': tag})
    assert response.status_code == 304
    assert not response.has_header('Last-Modified')
    assert not response.has_header('Cache-Control')


# ---- If-Match -------------------------------------------------------------------------

@pytest.mark.parametrize('resource', sorted(WRITES))
def test_a_stale_if_match_is_412_and_changes_nothing(api, rp, resource):
    part, write = WRITES[resource]
    stale = etag_of(api, rp_path(rp, part))
    api.set_traits(rp, ['HW_CPU_X86_AVX'])   # bumps the generation
    if resource == 'provider':
        assert api.put(rp_path(rp), {'name': 'moved-on'}).status_code == 200
    current = etag_of(api, rp_path(rp, part))
    with unchanged():
        error = assert_precondition_failed(write(api, rp_path(rp, part), {'If-Match': stale}))
    assert f'its current ETag is {current}' in error['detail']


def test_412_has_no_code_before_1_23(api, rp):
    with unchanged():
        response = api.put(rp_path(rp, '/traits'),
                           {'traits': [], 'resource_provider_generation': 1},
                           version='1.22', headers={'If-Match': '"stale"'})
        assert_precondition_failed(response, code=None)


@pytest.mark.parametrize('resource', sorted(WRITES))
def test_if_match_lets_the_body_leave_out_its_generation(api, rp, resource):
    part, write = WRITES[resource]
    response = write(api, rp_path(rp, part), {'If-Match': etag_of(api, rp_path(rp, part))})
    assert response.status_code == 200, response.content


def test_without_if_match_the_generation_is_still_required(api, rp):
    with unchanged():
        response = api.put(rp_path(rp, '/traits'), {'traits': []})
        assert_error(response, 400, "'resource_provider_generation' is a required property")


def test_if_match_and_a_stale_body_generation_is_still_a_conflict(api, rp):
    tag = etag_of(api, rp_path(rp, '/traits'))
    with unchanged():
        response = api.put(rp_path(rp, '/traits'),
                           {'traits': [], 'resource_provider_generation': 0},
                           headers={'If-Match': tag})
        assert_precondition_failed(response)


def test_if_match_compares_strongly(api, rp):
    tag = etag_of(api, rp_path(rp, '/traits'))
    with unchanged():
        assert_precondition_failed(api.delete(rp_path(rp, '/traits'),
                                              headers={'If-Match': f'W/{tag}'}))
    assert api.delete(rp_path(rp, '/traits'),
                      headers={'If-Match': f'"x", {tag}'}).status_code == 204


def test_if_match_star_means_it_exists(api, rp, consumer):
    assert api.delete(rp_path(rp, '/traits'), headers={'If-Match': '*'}).status_code == 204
    assert api.delete(f'/allocations/{consumer}', headers={'If-Match': '*'}).status_code == 204
    with unchanged():
        assert_precondition_failed(api.delete(f'/allocations/{consumer}',
                                              headers={'If-Match': '*'}))


@pytest.mark.parametrize('header', ['stale', '"a" "b"', 'W/', '"a",, "b"', '', ' , '])
def test_a_malformed_header_is_400(api, rp, header):
    with unchanged():
        assert_error(api.delete(rp_path(rp, '/traits'), headers={'If-Match': header}), 400,
                     'Invalid If-Match header')
    assert_error(api.get(rp_path(rp), headers={'If-None-Match': header}), 400,
                 'Invalid If-None-Match header')


def test_inventory_writes_without_a_generation_in_placement_are_guarded_too(api, rp):
    stale = etag_of(api, rp_path(rp, '/inventories'))
    api.set_traits(rp, ['HW_CPU_X86_AVX'])
    with unchanged():
        assert_precondition_failed(api.post(rp_path(rp, '/inventories'),
                                            {'resource_class': 'DISK_GB', 'total': 10},
                                            headers={'If-Match': stale}))
        assert_precondition_failed(api.delete(rp_path(rp, '/inventories/VCPU'),
                                              headers={'If-Match': stale}))
        assert_precondition_failed(api.delete(rp_path(rp, '/inventories'),
                                              headers={'If-Match': stale}))
    fresh = etag_of(api, rp_path(rp, '/inventories'))
    response = api.post(rp_path(rp, '/inventories'), {'resource_class': 'DISK_GB', 'total': 10},
                        headers={'If-Match': fresh})
    assert response.status_code == 201
    assert response['ETag'] == etag_of(api, rp_path(rp, '/inventories'))


def test_an_inventory_in_use_is_still_409_with_if_match(api, rp, consumer):
    tag = etag_of(api, rp_path(rp, '/inventories'))
    with unchanged():
        response = api.delete(rp_path(rp, '/inventories/VCPU'), headers={'If-Match': tag})
        assert_error(response, 409, 'in use', code=CONCURRENT_UPDATE)


def test_provider_delete_with_a_stale_etag_keeps_it(api, rp):
    api.delete(rp_path(rp, '/inventories'))
    stale = etag_of(api, rp_path(rp))
    assert api.put(rp_path(rp), {'name': 'renamed-meanwhile'}).status_code == 200
    with unchanged():
        assert_precondition_failed(api.delete(rp_path(rp), headers={'If-Match': stale}))
    response = api.delete(rp_path(rp), headers={'If-Match': etag_of(api, rp_path(rp))})
    assert response.status_code == 204
    assert api.get(rp_path(rp)).status_code == 404


def test_consumer_allocations_under_if_match(api, rp, consumer):
    path = f'/allocations/{consumer}'
    tag = etag_of(api, path)
    body = {'allocations': {rp: {'resources': {'VCPU': 4}}}, 'project_id': 'proj',
            'user_id': 'user', 'consumer_type': 'INSTANCE'}   # no consumer_generation
    response = api.put(path, body, headers={'If-Match': tag})
    assert response.status_code == 204, response.content
    with unchanged():
        assert_precondition_failed(api.put(path, body, headers={'If-Match': tag}))
        assert_precondition_failed(api.delete(path, headers={'If-Match': tag}))
    # Before 1.28 the body has no generation at all; If-Match still guards.
    old_body = {'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': 'proj',
                'user_id': 'user'}
    with unchanged():
        assert_precondition_failed(api.put(path, old_body, version='1.27',
                                           headers={'If-Match': tag}), code=CONCURRENT_UPDATE)
    assert api.delete(path, headers={'If-Match': response['ETag']}).status_code == 204
    assert api.get(path).body['allocations'] == {}


def test_creating_a_consumer_only_if_it_is_new(api, rp):
    path = f'/allocations/{new_uuid()}'
    body = {'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': 'proj',
            'user_id': 'user', 'consumer_type': 'INSTANCE'}
    first = api.put(path, body, headers={'If-None-Match': '*'})   # no consumer_generation
    assert first.status_code == 204, first.content
    assert first['ETag'] == etag_of(api, path)
    with unchanged():
        assert_precondition_failed(api.put(path, body, headers={'If-None-Match': '*'}))
        # Before 1.28 nothing in the body could say "new"; the header does.
        old_body = {key: body[key] for key in ('allocations', 'project_id', 'user_id')}
        assert_precondition_failed(api.put(path, old_body, version='1.27',
                                           headers={'If-None-Match': '*'}))
    assert api.put(f'/allocations/{new_uuid()}', old_body, version='1.27',
                   headers={'If-None-Match': '*'}).status_code == 204


def test_requests_without_the_headers_are_answered_as_before(api, rp):
    # The generation in the body decides, with Placement's 409.
    with unchanged():
        response = api.put(rp_path(rp, '/traits'),
                           {'traits': [], 'resource_provider_generation': 99})
        assert_error(response, 409, "Resource provider's generation already changed",
                     code=CONCURRENT_UPDATE)


# ---- racing writers over real HTTP ------------------------------------------------------

WRITERS = 6
CPU_TRAITS = sorted(os_traits.get_traits('HW_CPU_X86_'))[:3 * WRITERS]


def call(url, method, path, body=None, headers=None):
    return requests.request(method, url + path, json=body, timeout=120,
                            headers={**HEADERS, **(headers or {})})


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize('same', [False, True], ids=['different', 'same'])
@pytest.mark.parametrize('resource', ['traits', 'inventories', 'aggregates', 'provider',
                                      'allocations'])
def test_writers_racing_with_one_etag_one_wins(live_server, resource, same):
    """Writers of different bodies, or all of the same (where the losers'
    writes would change nothing), with the ETag they all read."""
    url = live_server.url
    rp = str(uuid.uuid4())
    assert call(url, 'POST', '/resource_providers', {'name': 'cn-race', 'uuid': rp}
                ).status_code == 200
    assert call(url, 'PUT', rp_path(rp, '/inventories'), {
        'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 64}}}
                ).status_code == 200
    consumer = str(uuid.uuid4())
    paths = {'allocations': f'/allocations/{consumer}', 'provider': rp_path(rp)}
    path = paths.get(resource, rp_path(rp, f'/{resource}'))
    if resource == 'allocations':
        assert call(url, 'PUT', path, {
            'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': 'p',
            'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'}
                    ).status_code == 204

    # Every body differs from what the turn starts with: a write that would
    # change nothing holds its precondition as long as nothing changed, so
    # it could win alongside the one that changes it.
    rounds = [str(uuid.uuid4()) for _ in range(3)]   # an aggregate per turn

    def body(i, turn):
        i = 0 if same else i
        return {
            'traits': {'traits': [CPU_TRAITS[turn * WRITERS + i]]},
            'inventories': {'inventories': {'VCPU': {'total': 10 + i + 10 * turn}}},
            'aggregates': {'aggregates': [rounds[turn], *([str(uuid.uuid4())] * (i > 0))]},
            'provider': {'name': f'cn-race-{turn}-{i}'},
            'allocations': {'allocations': {rp: {'resources': {'VCPU': 2 + i + 10 * turn}}},
                            'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE'},
        }[resource]

    for turn in range(3):
        tag = call(url, 'GET', path).headers['ETag']
        answers = together(WRITERS, lambda i: call(url, 'PUT', path, body(i, turn),
                                                   headers={'If-Match': tag}))
        statuses = sorted(a.status_code for a in answers)
        assert statuses[0] in (200, 204) and statuses[1:] == [412] * (WRITERS - 1), statuses
        for answer in answers:
            if answer.status_code == 412:
                assert answer.json()['errors'][0]['code'] == CONCURRENT_UPDATE
        winner = next(a for a in answers if a.status_code != 412)
        after = call(url, 'GET', path)
        assert after.headers['ETag'] == winner.headers['ETag'] != tag
        # The winner's answer is what is now there.
        if resource == 'aggregates':
            assert set(after.json()['aggregates']) == set(winner.json()['aggregates'])
        elif resource != 'allocations':
            assert after.json() == winner.json()
