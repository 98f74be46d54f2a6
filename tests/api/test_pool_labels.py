"""A pool's name (not part of OpenStack Placement): the rule
(AggregateQuerySet.with_names) with its three sources in their order, and
/pool_labels/{uuid}, the admin's label: answers, Placement's error format
for every refusal, policy. On every database: the rule is SQL."""
import pytest

from tests.support.api import assert_error
from tests.support.api import new_uuid

SERVICE = {'X-Roles': 'service'}


def pool(api, *members, sharing=()):
    """A new aggregate of new providers named as given; those in `sharing`
    share their inventory (MISC_SHARES_VIA_AGGREGATE)."""
    aggregate = new_uuid()
    for name in [*members, *sharing]:
        rp = api.create_provider(name=name)['uuid']
        api.set_aggregates(rp, [aggregate])
        if name in sharing:
            api.set_traits(rp, ['MISC_SHARES_VIA_AGGREGATE'])
    return aggregate


def name_of(api, aggregate):
    response = api.get(f'/pool_labels/{aggregate}')
    assert response.status_code == 200, response.content
    return response.body['name']


def test_a_pool_is_named_by_its_label_then_its_pod_then_its_sole_sharing_provider(api):
    aggregate = pool(api, 'cn1', 'cn2', sharing=['nfs-1'])
    assert name_of(api, aggregate) == 'nfs-1'
    assert api.post('/pods', {'name': 'pod-a', 'aggregate': aggregate}).status_code == 201
    assert name_of(api, aggregate) == 'pod-a'
    assert api.put(f'/pool_labels/{aggregate}', {'label': 'Gold'}).status_code == 200
    assert name_of(api, aggregate) == 'Gold'
    assert api.delete(f'/pool_labels/{aggregate}').status_code == 204
    assert name_of(api, aggregate) == 'pod-a'


def test_a_pool_of_no_or_several_sharing_providers_goes_by_its_uuid(api):
    alone = pool(api, 'cn1')
    two = pool(api, 'cn2', sharing=['nfs-1', 'nfs-2'])
    assert name_of(api, alone) == alone
    assert name_of(api, two) == two
    # The other pools' sharing providers are not this one's.
    one = pool(api, 'cn3', sharing=['nfs-3'])
    assert name_of(api, one) == 'nfs-3'
    assert name_of(api, two) == two


def test_the_label_api(api):
    aggregate = pool(api, 'cn1')
    response = api.get(f'/pool_labels/{aggregate}')
    assert response.body == {'aggregate': aggregate, 'label': None, 'name': aggregate,
                             'links': [{'rel': 'self', 'href': f'/pool_labels/{aggregate}'}]}
    response = api.put(f'/pool_labels/{aggregate}', {'label': 'Gold'})
    assert (response.status_code, response.body['label'], response.body['name']) == (
        200, 'Gold', 'Gold')
    response = api.put(f'/pool_labels/{aggregate}', {'label': 'Silver pool'})
    assert response.body['label'] == 'Silver pool'
    assert api.get(f'/pool_labels/{aggregate}').body['label'] == 'Silver pool'
    assert api.delete(f'/pool_labels/{aggregate}').status_code == 204
    assert api.get(f'/pool_labels/{aggregate}').body['label'] is None
    assert api.delete(f'/pool_labels/{aggregate}').status_code == 204   # none: nothing changes


@pytest.mark.parametrize('body', [
    {'label': ''}, {'label': '   '}, {'label': 'x' * 201}, {'label': 5}, {'label': None},
    {'label': ['Gold']}, {}, {'label': 'Gold', 'other': 1}, ['Gold'], 'Gold',
], ids=['empty', 'blank', 'too long', 'number', 'null', 'list', 'missing', 'extra', 'array',
        'string'])
def test_a_bad_label_is_400(api, body):
    aggregate = pool(api, 'cn1')
    assert_error(api.put(f'/pool_labels/{aggregate}', body), 400)
    assert api.get(f'/pool_labels/{aggregate}').body['label'] is None


def test_a_label_of_200_characters_and_any_letters_is_kept(api):
    aggregate = pool(api, 'cn1')
    for label in ('x' * 200, 'Zürich ☁ pool'):
        assert api.put(f'/pool_labels/{aggregate}', {'label': label}).body['name'] == label


def test_an_unknown_aggregate_is_404(api):
    unknown = new_uuid()
    assert_error(api.get(f'/pool_labels/{unknown}'), 404)
    assert_error(api.put(f'/pool_labels/{unknown}', {'label': 'Gold'}), 404)
    assert_error(api.delete(f'/pool_labels/{unknown}'), 404)
    assert_error(api.get(f'/pool_labels/{"x" * 300}'), 404)


def test_only_an_admin_labels_a_pool(api, make_api):
    aggregate = pool(api, 'cn1')
    nova = make_api(token='nova:service-project')
    user = make_api(token='user')
    assert nova.get(f'/pool_labels/{aggregate}', headers=SERVICE).status_code == 200
    for client, headers in ((nova, SERVICE), (user, None)):
        assert_error(client.put(f'/pool_labels/{aggregate}', {'label': 'Gold'}, headers=headers),
                     403, 'Policy does not allow placement:pool_labels:update to be performed.')
        assert_error(client.delete(f'/pool_labels/{aggregate}', headers=headers), 403,
                     'Policy does not allow placement:pool_labels:delete to be performed.')
    assert_error(user.get(f'/pool_labels/{aggregate}'), 403,
                 'Policy does not allow placement:pool_labels:show to be performed.')
    assert api.get(f'/pool_labels/{aggregate}').body['label'] is None
