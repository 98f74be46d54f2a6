"""GET /metrics in the tests: its text parsed into samples, and a sample's
value."""
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families


def parse(text):
    """{(sample name, frozenset of labels): value}, through prometheus-client's
    own parser (which refuses malformed text), and {family: (type, help)}."""
    samples, families = {}, {}
    for family in text_string_to_metric_families(text):
        families[family.name] = (family.type, family.documentation)
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, key
            samples[key] = sample.value
    return samples, families


def scrape(client=None, **extra):
    response = (client or Client()).get('/metrics', **extra)
    assert response.status_code == 200, response
    assert response['Content-Type'] == 'text/plain; version=0.0.4; charset=utf-8'
    return parse(b''.join(response.streaming_content).decode())[0]


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0)


def of(samples, name):
    """{frozenset of labels: value} of one sample name."""
    return {labels: v for (n, labels), v in samples.items() if n == name}
