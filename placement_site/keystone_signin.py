"""Signing in to the dashboards with the cloud's Keystone
(PLACEMENT_UI_AUTH=keystone, beside or instead of local Django accounts).

The user name, password, domain and optionally a project (or "system")
are checked by Keystone itself through keystoneauth1 against the Keystone
the API's auth_token options name (KEYSTONE_AUTHTOKEN_AUTH_URL, or
PLACEMENT_UI_KEYSTONE_URL, with or without /v3: keystoneauth1's version
discovery finds the v3 API); so is an application credential's id and
secret. Without a project the token is scoped to the user's first project,
as Horizon does, and the user may switch to any other of theirs. The
session keeps the token, its scope and roles; pages re-validate the token
with Keystone at most every PLACEMENT_UI_TOKEN_RECHECK_SECONDS, so a revoked
one signs the user out within that bound and an expired one on the next
page, with a message. The local user standing for a Keystone identity
is named after its Keystone user id; what it may see and change is the
policy's answer for the token (placement_site.viewers).
"""
import functools
import logging
from datetime import UTC
from datetime import datetime

from axes.signals import user_locked_out
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import authenticate
from django.contrib.auth import get_user_model
from django.contrib.auth import logout
from django.contrib.auth import user_logged_out
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.dispatch import receiver
from django.shortcuts import redirect
from django.views.decorators.http import require_POST
from keystoneauth1 import discover
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from placement_site import policy
from placement_site import serving
from placement_site import viewers

LOG = logging.getLogger('placement.signin')
SESSION_KEY = viewers.SESSION_KEY
USERNAME_PREFIX = 'keystone:'
TIMEOUT = 10
PASSWORD, APPLICATION_CREDENTIAL = 'password', 'application_credential'
SYSTEM = 'system'   # the scope choice standing for the whole system


def enabled():
    return 'keystone' in settings.PLACEMENT_UI_AUTH


def configured_url():
    return settings.PLACEMENT_UI_KEYSTONE_URL or settings.KEYSTONE_AUTHTOKEN.get('auth_url')


def keystone_url():
    """Keystone's v3 API behind the configured URL, which install guides
    write without /v3 (http://keystone:5000)."""
    return _identity_v3(configured_url())


@functools.lru_cache(maxsize=4)
def _identity_v3(url):
    # Asked once per process: Keystone's versions do not move under us. A
    # failure (Keystone out of reach) is not remembered.
    found = discover.get_discovery(ks_session.Session(timeout=TIMEOUT), url,
                                   authenticated=False).url_for((3, 0))
    if found is None:
        raise ks_exceptions.DiscoveryFailure(f'{url} offers no Keystone v3 API')
    return found.rstrip('/')


def _access(auth):
    return auth.get_access(ks_session.Session(auth=auth, timeout=TIMEOUT))


def _listed(token, path, key):
    """What Keystone lists for the token itself (GET /v3/auth/projects or
    /v3/auth/system): every project, or the system, it may be scoped to."""
    answer = ks_session.Session(timeout=TIMEOUT).get(
        f'{keystone_url()}/auth/{path}', headers={'X-Auth-Token': token},
        raise_exc=False)
    return answer.json().get(key, []) if answer.status_code == 200 else []


def _scopes(access, method):
    """(projects [(id, name)] by name, system allowed) the user may switch
    to; an application credential is bound to its project."""
    if method == APPLICATION_CREDENTIAL:
        return [], False
    projects = sorted(((p['id'], p['name']) for p in _listed(access.auth_token, 'projects',
                                                            'projects')),
                      key=lambda project: (project[1], project[0]))
    return projects, bool(_listed(access.auth_token, 'system', 'system'))


def now():
    """The time the sign-in's bounds are counted in (a test moves it on)."""
    return datetime.now(UTC)


def _held(access, method, projects, system_allowed):
    """What the session keeps of a Keystone sign-in: Keystone has just
    issued the token, which counts as its first check."""
    return {
        'checked_at': now().timestamp(),
        'token': access.auth_token, 'expires_at': access.expires.isoformat(),
        'user_id': access.user_id, 'user': access.username,
        'domain': access.user_domain_name, 'project_id': access.project_id,
        'project': access.project_name, 'roles': access.role_names,
        'system': bool(access.system_scoped), 'method': method,
        'projects': projects, 'system_allowed': system_allowed,
    }


class KeystoneBackend:
    """Django authentication backend: Keystone checks the password (or
    the application credential's secret)."""

    def authenticate(self, request, username=None, password=None, domain=None, project=None,
                     method=PASSWORD, **kwargs):
        if not enabled() or not username or not password or not configured_url():
            return None
        domain = domain or 'Default'
        try:
            if method == APPLICATION_CREDENTIAL:
                auth = v3.ApplicationCredential(auth_url=keystone_url(),
                                                application_credential_id=username,
                                                application_credential_secret=password)
            else:
                system = project == SYSTEM
                auth = v3.Password(auth_url=keystone_url(), username=username, password=password,
                                   user_domain_name=domain,
                                   system_scope='all' if system else None,
                                   project_name=None if system else project or None,
                                   project_domain_name=domain if project and not system else None)
            access = _access(auth)
            projects, system_allowed = _scopes(access, method)
            if not (access.project_scoped or access.system_scoped) and projects:
                # No scope asked for: the first project, as Horizon does.
                access = _access(v3.Token(auth_url=keystone_url(), token=access.auth_token,
                                          project_id=projects[0][0]))
        except ks_exceptions.Unauthorized:
            LOG.warning('sign-in refused by Keystone: user %s (domain %s) from %s',
                        username, domain, serving.client_address(request))
            return None
        except ks_exceptions.ClientException as exc:
            LOG.error('sign-in failed: Keystone at %s did not answer (%s)', configured_url(), exc)
            return None
        held = _held(access, method, projects, system_allowed)
        user = _local_user(held)
        if request is not None:
            request.session[SESSION_KEY] = held
        LOG.info('signed in through Keystone: user %s (%s) %s roles %s from %s',
                 held['user'], held['user_id'], _scope_named(held), ','.join(held['roles']),
                 serving.client_address(request))
        return user

    def get_user(self, user_id):
        return get_user_model().objects.filter(pk=user_id, is_active=True).first()


def _scope_named(held):
    return 'system' if held['system'] else f'project {held["project_id"]}'


def _local_user(held):
    """The local user standing for the Keystone user: staff (the admin's
    door) when Placement's policy lets the token see the whole cloud."""
    user, _ = get_user_model().objects.update_or_create(
        username=f'{USERNAME_PREFIX}{held["user_id"]}',
        defaults={'first_name': held['user'][:150],
                  'is_staff': policy.permits(viewers.context_of(held), policy.DASHBOARD_CLOUD),
                  'is_superuser': False, 'is_active': True})
    if user.has_usable_password():
        user.set_unusable_password()
        user.save(update_fields=['password'])
    return user


@require_POST
def switch_scope(request):
    """Re-scope the session's Keystone token to another of the user's
    projects (or the system): Keystone issues the new token."""
    held = request.session.get(SESSION_KEY) if request.user.is_authenticated else None
    wanted = request.POST.get('scope', '')
    if held is None or not (wanted in {p for p, _ in held['projects']}
                            or (wanted == SYSTEM and held['system_allowed'])):
        messages.error(request, 'That project is not one you can switch to.')
        return redirect('ui:overview')
    try:
        access = _access(v3.Token(auth_url=keystone_url(), token=held['token'],
                                  system_scope='all' if wanted == SYSTEM else None,
                                  project_id=None if wanted == SYSTEM else wanted))
    except ks_exceptions.ClientException as exc:
        LOG.warning('switching %s to %s refused by Keystone (%s)', held['user'], wanted, exc)
        messages.error(request, 'Keystone refused to switch to that project.')
        return redirect('ui:overview')
    switched = _held(access, held['method'], held['projects'], held['system_allowed'])
    request.session[SESSION_KEY] = switched
    _local_user(switched)
    LOG.info('switched scope: user %s (%s) to %s roles %s from %s', switched['user'],
             switched['user_id'], _scope_named(switched), ','.join(switched['roles']),
             serving.client_address(request))
    return redirect('ui:overview')


class SignInForm(AuthenticationForm):
    """The sign-in form, with Keystone's domain and project when signing
    in through Keystone is enabled; every sign-in and refusal, local or
    Keystone's, is an audit line (who, from where)."""
    domain = forms.CharField(required=False, max_length=255)
    project = forms.CharField(required=False, max_length=255)
    method = forms.ChoiceField(required=False, choices=[
        (PASSWORD, 'password'), (APPLICATION_CREDENTIAL, 'application credential')])

    def clean(self):
        username, password = self.cleaned_data.get('username'), self.cleaned_data.get('password')
        if username is not None and password:
            self.user_cache = authenticate(
                self.request, username=username, password=password,
                domain=self.cleaned_data.get('domain') or None,
                project=self.cleaned_data.get('project') or None,
                method=self.cleaned_data.get('method') or PASSWORD)
            if self.user_cache is None:
                LOG.warning('sign-in refused: user %s from %s', username,
                            serving.client_address(self.request))
                raise self.get_invalid_login_error()
            self.confirm_login_allowed(self.user_cache)
            LOG.info('signed in: user %s (%s) from %s', username,
                     'Keystone' if self.user_cache.username.startswith(USERNAME_PREFIX)
                     else 'local account', serving.client_address(self.request))
        return self.cleaned_data


@receiver(user_locked_out)
def _locked_out(sender, request, username, ip_address, **kwargs):
    """django-axes' lock, as it begins and on each sign-in it refuses."""
    LOG.warning('sign-in locked: user %s from %s', username, ip_address)


@receiver(user_logged_out)
def _signed_out(sender, request, user, **kwargs):
    """Every sign-out (the pages', the admin's, a session whose token
    ended): an audit line, and a Keystone sign-in's token revoked, as
    Horizon does, so the token outlives the session nowhere."""
    held = request.session.get(SESSION_KEY) or {}
    LOG.info('signed out: user %s from %s', held.get('user') or (user and user.get_username()),
             serving.client_address(request))
    if held.get('token'):
        _revoke(held['token'])


def _revoke(token):
    """The token revokes itself (Keystone lets a token's subject)."""
    try:
        ks_session.Session(timeout=TIMEOUT).delete(
            f'{keystone_url()}/auth/tokens',
            headers={'X-Auth-Token': token, 'X-Subject-Token': token}, raise_exc=False)
    except ks_exceptions.ClientException as exc:
        LOG.error('could not revoke a signed-out Keystone token (%s): it lives until it '
                  'expires', exc)


class SignInView(LoginView):
    form_class = SignInForm

    def get_context_data(self, **kwargs):
        return super().get_context_data(keystone_signin=enabled(), **kwargs)


def token_valid(token):
    """Does Keystone still honour the token (not revoked, not expired)?
    The token validates itself (Keystone lets a token's subject)."""
    session = ks_session.Session(timeout=TIMEOUT)
    try:
        answer = session.get(f'{keystone_url()}/auth/tokens',
                             headers={'X-Auth-Token': token, 'X-Subject-Token': token},
                             raise_exc=False)
    except ks_exceptions.ClientException as exc:
        LOG.error('could not re-validate a Keystone session (%s): kept for now', exc)
        return True
    return answer.status_code == 200


def _still_valid(request, held, moment):
    """token_valid, asked at most every PLACEMENT_UI_TOKEN_RECHECK_SECONDS
    (0: on every page): the session keeps when Keystone last said yes, so
    every process serving the session shares the answer, and signing out
    (the session flushed) forgets it."""
    interval = settings.PLACEMENT_UI_TOKEN_RECHECK_SECONDS
    checked = held.get('checked_at')
    # A time ahead of ours (another server's clock) does not stretch the bound.
    if interval and checked and 0 <= moment.timestamp() - checked < interval:
        return True
    if not token_valid(held['token']):
        return False
    if interval:
        held['checked_at'] = moment.timestamp()
        request.session.modified = True
    return True


class KeystoneSessionMiddleware:
    """Every page of a Keystone-signed-in session: the token's expiry
    checked, and the token re-validated when Keystone's last answer is
    older than the bound; expired or revoked, the session ends with a
    message."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # Only a request carrying a session reads it: touching the session
        # would add Vary: Cookie to every API answer.
        held = (request.session.get(SESSION_KEY)
                if settings.SESSION_COOKIE_NAME in request.COOKIES else None)
        if held and request.user.is_authenticated:
            moment = now()
            expired = datetime.fromisoformat(held['expires_at']) <= moment
            if expired or not _still_valid(request, held, moment):
                LOG.info('Keystone session of %s ended: token %s', held['user'],
                         'expired' if expired else 'no longer valid')
                logout(request)
                messages.warning(request, 'Your Keystone sign-in has ended (the token expired '
                                          'or was revoked): sign in again.')
            else:
                # The admin's permissions are the token's (PolicyPermissions).
                request.user.keystone_signin = held
        return self.get_response(request)
