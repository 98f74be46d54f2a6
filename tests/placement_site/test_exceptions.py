"""The domain errors (placement_site.exceptions) each carry the status and
code Placement answers them with, and the API's one error path answers
any a view lets through with them: a 4xx in Placement's format, never a
500 (tests/api/test_pods.py: a pod in use, 409 placement.pod.inuse, which
no view catches). A handler only words one differently (errors.worded)."""
import ast
from pathlib import Path

import pytest

from placement_site import errors
from placement_site import exceptions

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


# ---- a handler's wording (errors.worded) ----------------------------------------

def raised(wording, error, **names):
    with pytest.raises(errors.PlacementError) as caught, errors.worded(wording, **names):
        raise error
    return caught.value


def test_a_wording_keeps_the_errors_status_code_and_staleness():
    cause = exceptions.InventoryInUse(resource_classes='VCPU', resource_provider='rp')
    answer = raised({exceptions.InventoryInUse: 'update conflict on {rp}: {error}'}, cause,
                    rp='rp')
    assert (answer.status, answer.code, answer.stale, answer.vary) == (
        409, errors.INVENTORY_INUSE, False, True)
    assert answer.detail == f'update conflict on rp: {cause}'
    # Raised from the domain error: placement_site.metrics reads the cause.
    assert answer.__cause__ is cause
    stale = raised({exceptions.ConcurrentUpdate: 'Update conflict: {error}'},
                   exceptions.ProviderConcurrentUpdate())
    assert (stale.status, stale.code, stale.stale) == (409, errors.CONCURRENT_UPDATE, True)


def test_only_what_a_handler_answers_differently_is_said():
    answer = raised({exceptions.NotFound: errors.Worded('bad: {error}', status=400)},
                    exceptions.ResourceClassNotFound(name='CUSTOM_X'))
    assert (answer.status, answer.code, answer.detail) == (
        400, errors.DEFAULT, 'bad: No such resource class CUSTOM_X.')


def test_the_first_matching_wording_wins_and_others_pass_unchanged():
    wording = {exceptions.ConsumerGenerationConflict: '{error}',
               exceptions.ConcurrentUpdate: 'changed: {error}'}
    conflict = exceptions.ConsumerGenerationConflict(expected=1, got=2)
    assert raised(wording, conflict).detail == str(conflict)
    unworded = exceptions.ProviderInUse()
    assert raised(wording, unworded) is unworded
    plain = errors.bad_request('no')
    assert raised(wording, plain) is plain


# ---- the views raise, the one error path answers --------------------------------

ROOT = Path(__file__).resolve().parents[2]
VIEWS = sorted([*ROOT.glob('providers/api/**/*.py'), *ROOT.glob('allocations/api/**/*.py'),
                ROOT / 'providers/pods/views.py'])


@pytest.mark.parametrize('path', VIEWS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_api_view_catches_an_error_to_restate_it(path):
    """A view lets errors through (their own status and code), wording one
    with errors.worded where Placement's handler does."""
    caught = [ast.unparse(handler.type) for handler in ast.walk(ast.parse(path.read_text()))
              if isinstance(handler, ast.ExceptHandler) and handler.type is not None]
    assert [name for name in caught if 'exceptions.' in name or 'errors.' in name
            or name.endswith(('Error', 'Refused', 'NotFound'))] == []
