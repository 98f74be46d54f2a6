"""The domain errors (placement_site.exceptions) each carry the status and
code Placement answers them with, and the API's one error handler answers
any a view lets through with them: a 4xx in Placement's format, never a
500 (tests/api/test_pods.py: a pod in use, 409 placement.pod.inuse, which
no view catches)."""
import pytest

from placement_site import errors, exceptions

pytestmark = pytest.mark.any_database


def every_domain_error(cls=exceptions.PlacementDomainError):
    for sub in cls.__subclasses__():
        yield sub
        yield from every_domain_error(sub)


@pytest.mark.parametrize('error', sorted(every_domain_error(), key=lambda c: c.__name__),
                         ids=lambda c: c.__name__)
def test_every_domain_error_has_a_client_status_and_a_known_code(error):
    assert 400 <= error.status < 500
    known = {value for name, value in vars(errors).items()
             if name.isupper() and isinstance(value, str) and value.startswith('placement.')}
    assert error.code in known
