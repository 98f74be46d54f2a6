"""Change notifications: the event log sent through oslo.messaging by the
dispatcher (providers.notifications, manage.py send_notifications), to a
real RabbitMQ broker (Debian's rabbitmq-server, started here: tests/support/broker.py)
and through oslo.messaging's log driver."""
import logging
import tempfile
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError
from django.core.management import call_command
from django.utils import timezone

from providers import events
from providers import notifications
from providers.models import Event
from providers.models import EventProvider
from tests.support.api import new_uuid
from tests.support.broker import Broker

AGGREGATE = new_uuid()


@pytest.fixture(scope='module')
def broker():
    if not Broker.installed():
        pytest.fail("rabbitmq-server is missing: the notification tests need Debian's "
                    'rabbitmq-server (apt-get install rabbitmq-server; scripts/test.sh '
                    'installs it)')
    running = Broker(tempfile.mkdtemp(prefix='placement-rabbitmq-'))
    running.start()
    yield running
    running.cleanup()


@pytest.fixture
def sender(broker):
    broker.drain()  # what earlier tests left
    to_broker = notifications.Sender('messagingv2', broker.url)
    yield to_broker
    to_broker.close()


def make_pool(api):
    """A few changes of different kinds: a pool created, marked shared,
    given inventory and an aggregate, and a consumer's allocation."""
    pool = api.create_provider(name=f'pool-{new_uuid()[:8]}')['uuid']
    api.set_traits(pool, ['MISC_SHARES_VIA_AGGREGATE'])
    api.set_inventory(pool, {'DISK_GB': {'total': 1000, 'reserved': 10}})
    api.set_aggregates(pool, [AGGREGATE])
    api.allocate(new_uuid(), {pool: {'DISK_GB': 100}})
    return pool


def data(message):
    return message['payload']['placement_object.data']


@pytest.mark.slow  # a real broker
def test_the_broker_receives_every_change_in_order_as_a_versioned_notification(
        api, broker, sender):
    pool = make_pool(api)
    written = list(Event.objects.order_by('pk'))
    assert len(written) == 5

    assert notifications.send_pending(sender) == (5, False)

    messages = broker.drain()
    assert [m['event_type'] for m in messages] == [
        'resource_provider.create', 'resource_provider.trait.update',
        'resource_provider.inventory.update', 'resource_provider.aggregate.add',
        'allocation.update']
    assert [data(m)['id'] for m in messages] == [e.pk for e in written]
    for message in messages:
        assert message['publisher_id'] == 'placement'
        assert message['priority'] == 'INFO'
        assert message['payload']['placement_object.namespace'] == 'placement'
        assert message['payload']['placement_object.version'] == '1.0'
    assert messages[0]['payload']['placement_object.name'] == 'ResourceProviderPayload'
    assert messages[-1]['payload']['placement_object.name'] == 'AllocationPayload'
    added = data(messages[3])
    assert added['payload'] == {'added': [AGGREGATE], 'removed': []}
    assert added['providers'] == [{'uuid': pool, 'generation_before': 2,
                                   'generation_after': 3}]
    # The request that made the change is the notification's context.
    assert added['request_id'].startswith('req-')
    assert messages[3]['_context_request_id'] == added['request_id']
    assert messages[3]['_context_user'] == 'admin'
    assert messages[3]['_context_project_id'] == 'admin'
    # Every event is marked sent, and nothing is sent twice.
    assert not Event.objects.unsent().exists()
    assert notifications.send_pending(sender) == (0, False)
    assert broker.drain() == []


@pytest.mark.slow  # a real broker
def test_events_queue_while_the_broker_is_down_and_all_go_out_when_it_is_back(
        api, broker, sender, settings):
    settings.PLACEMENT_NOTIFICATIONS_DRIVER = 'messagingv2'
    settings.PLACEMENT_TRANSPORT_URL = broker.url
    make_pool(api)
    assert notifications.send_pending(sender) == (5, False)
    broker.drain()

    broker.stop()
    try:
        pools = [make_pool(api) for _ in range(4)]  # 20 changes during the outage
        assert notifications.send_pending(sender) == (0, True)
        with pytest.raises(CommandError, match='is the broker up'):
            call_command('send_notifications', '--once', stdout=_Sink(), stderr=_Sink())
        assert Event.objects.unsent().count() == 20
    finally:
        broker.start()

    sent, failed = notifications.send_pending(sender)
    assert (sent, failed) == (20, False)
    messages = broker.drain()
    assert len(messages) == 20
    assert [data(m)['id'] for m in messages] == sorted(data(m)['id'] for m in messages)
    # In order per provider: each pool's generations follow one another.
    for pool in pools:
        chain = [(p['generation_before'], p['generation_after'])
                 for m in messages for p in data(m)['providers'] if p['uuid'] == pool]
        assert chain == [(None, 0), (0, 1), (1, 2), (2, 3), (3, 4)]
    assert not Event.objects.unsent().exists()


class _Sink:
    def write(self, text):
        pass

    def flush(self):
        pass


def test_the_log_driver_logs_each_notification_and_marks_it_sent(api, caplog, settings):
    settings.PLACEMENT_NOTIFICATIONS_DRIVER = 'log'
    make_pool(api)
    with caplog.at_level(logging.INFO, logger='oslo.messaging.notification'):
        call_command('send_notifications', '--once', stdout=_Sink())
    logged = [r for r in caplog.records if r.name.startswith('oslo.messaging.notification.')]
    assert [r.name.rsplit('notification.', 1)[1] for r in logged] == [
        e.event_type for e in Event.objects.order_by('pk')]
    assert not Event.objects.unsent().exists()


def test_with_the_noop_driver_nothing_is_sent_and_the_log_keeps_the_events(api, settings,
                                                                           capsys):
    settings.PLACEMENT_NOTIFICATIONS_DRIVER = 'noop'
    make_pool(api)
    call_command('send_notifications', '--once')
    assert 'Notifications are off' in capsys.readouterr().out
    assert Event.objects.unsent().count() == 5


def test_messagingv2_needs_a_transport_url(settings):
    settings.PLACEMENT_TRANSPORT_URL = None
    with pytest.raises(ImproperlyConfigured, match='PLACEMENT_TRANSPORT_URL'):
        notifications.Sender('messagingv2')


def test_each_event_type_has_its_payload_name(db):
    for event_type in events.EVENT_TYPES:
        expected = ('AllocationPayload' if event_type.startswith('allocation.')
                    else 'ResourceProviderPayload')
        assert notifications.payload_name(event_type) == expected


def test_pruning_deletes_only_old_sent_events(api, capsys):
    make_pool(api)
    old, sent_recently, unsent_old = Event.objects.order_by('pk')[:3]
    long_ago = timezone.now() - timedelta(days=40)
    Event.objects.filter(pk__in=[old.pk, unsent_old.pk]).update(created_at=long_ago)
    Event.objects.filter(pk__in=[old.pk, sent_recently.pk]).update(sent_at=timezone.now())

    call_command('prune_events', '--older-than-days', '30')

    assert 'Deleted 1 sent event(s)' in capsys.readouterr().out
    assert not Event.objects.filter(pk=old.pk).exists()
    assert not EventProvider.objects.filter(event_id=old.pk).exists()
    assert Event.objects.count() == 4
    with pytest.raises(CommandError, match='must not be negative'):
        call_command('prune_events', '--older-than-days', '-1')
