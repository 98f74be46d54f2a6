"""Signing in to the dashboards with the cloud's Keystone
(PLACEMENT_UI_AUTH=keystone, beside or instead of local Django accounts).

The user name, password, domain and optionally a project are checked by
Keystone itself through keystoneauth1 against the Keystone the API's
auth_token options name (KEYSTONE_AUTHTOKEN_AUTH_URL, or
PLACEMENT_UI_KEYSTONE_URL). The session keeps the token, its project and
roles; every page re-validates the token with Keystone, so a revoked or
expired one signs the user out on the next page, with a message. The local
user standing for a Keystone identity is named after its Keystone user id;
it is staff when Placement's policy, the API's own rules and policy file,
lets the token list resource providers (placement:resource_providers:list).
"""
import logging
from datetime import datetime, timezone

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import authenticate, get_user_model, logout
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3
from oslo_context import context as oslo_context

from placement_site import errors, policy

LOG = logging.getLogger('placement.signin')
SESSION_KEY = 'keystone'
USERNAME_PREFIX = 'keystone:'
DASHBOARD_RULE = 'placement:resource_providers:list'
TIMEOUT = 10


def enabled():
    return 'keystone' in settings.PLACEMENT_UI_AUTH


def keystone_url():
    return settings.PLACEMENT_UI_KEYSTONE_URL or settings.KEYSTONE_AUTHTOKEN.get('auth_url')


def client_address(request):
    return request.META.get('REMOTE_ADDR', '') if request is not None else ''


class KeystoneBackend:
    """Django authentication backend: Keystone checks the password."""

    def authenticate(self, request, username=None, password=None, domain=None, project=None,
                     **kwargs):
        if not enabled() or not username or not password or not keystone_url():
            return None
        domain = domain or 'Default'
        auth = v3.Password(auth_url=keystone_url(), username=username, password=password,
                           user_domain_name=domain, project_name=project or None,
                           project_domain_name=domain if project else None)
        session = ks_session.Session(auth=auth, timeout=TIMEOUT)
        try:
            access = auth.get_access(session)
        except ks_exceptions.Unauthorized:
            LOG.warning('sign-in refused by Keystone: user %s (domain %s) from %s',
                        username, domain, client_address(request))
            return None
        except ks_exceptions.ClientException as exc:
            LOG.error('sign-in failed: Keystone at %s did not answer (%s)', keystone_url(), exc)
            return None
        user = _local_user(access)
        if request is not None:
            request.session[SESSION_KEY] = {
                'token': access.auth_token, 'expires_at': access.expires.isoformat(),
                'user_id': access.user_id, 'user': access.username,
                'domain': access.user_domain_name, 'project_id': access.project_id,
                'project': access.project_name, 'roles': access.role_names,
            }
        LOG.info('signed in through Keystone: user %s (%s) project %s roles %s from %s',
                 access.username, access.user_id, access.project_id,
                 ','.join(access.role_names), client_address(request))
        return user

    def get_user(self, user_id):
        return get_user_model().objects.filter(pk=user_id, is_active=True).first()


def may_see_dashboards(access):
    """Does Placement's policy let this token list providers?"""
    context = oslo_context.RequestContext(
        user_id=access.user_id, project_id=access.project_id, roles=access.role_names,
        system_scope='all' if access.system_scoped else None)
    try:
        policy.authorize(context, DASHBOARD_RULE)
    except errors.PlacementError:
        return False
    return True


def _local_user(access):
    user, _ = get_user_model().objects.update_or_create(
        username=f'{USERNAME_PREFIX}{access.user_id}',
        defaults={'first_name': access.username[:150], 'is_staff': may_see_dashboards(access),
                  'is_superuser': False, 'is_active': True})
    if user.has_usable_password():
        user.set_unusable_password()
        user.save(update_fields=['password'])
    return user


class SignInForm(AuthenticationForm):
    """The sign-in form, with Keystone's domain and project when signing
    in through Keystone is enabled; every sign-in and refusal, local or
    Keystone's, is an audit line (who, from where)."""
    domain = forms.CharField(required=False, max_length=255)
    project = forms.CharField(required=False, max_length=255)

    def clean(self):
        username, password = self.cleaned_data.get('username'), self.cleaned_data.get('password')
        if username is not None and password:
            self.user_cache = authenticate(
                self.request, username=username, password=password,
                domain=self.cleaned_data.get('domain') or None,
                project=self.cleaned_data.get('project') or None)
            if self.user_cache is None:
                LOG.warning('sign-in refused: user %s from %s', username,
                            client_address(self.request))
                raise self.get_invalid_login_error()
            self.confirm_login_allowed(self.user_cache)
            LOG.info('signed in: user %s (%s) from %s', username,
                     'Keystone' if self.user_cache.username.startswith(USERNAME_PREFIX)
                     else 'local account', client_address(self.request))
        return self.cleaned_data


class SignInView(LoginView):
    form_class = SignInForm

    def get_context_data(self, **kwargs):
        return super().get_context_data(keystone_signin=enabled(), **kwargs)


def token_valid(token):
    """Does Keystone still honour the token (not revoked, not expired)?
    The token validates itself (Keystone lets a token's subject)."""
    session = ks_session.Session(timeout=TIMEOUT)
    try:
        answer = session.get(f'{keystone_url().rstrip("/")}/auth/tokens',
                             headers={'X-Auth-Token': token, 'X-Subject-Token': token},
                             raise_exc=False)
    except ks_exceptions.ClientException as exc:
        LOG.error('could not re-validate a Keystone session (%s): kept for now', exc)
        return True
    return answer.status_code == 200


class KeystoneSessionMiddleware:
    """Every page of a Keystone-signed-in session: the token re-validated;
    revoked or expired, the session ends with a message."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # Only a request carrying a session reads it: touching the session
        # would add Vary: Cookie to every API answer.
        held = (request.session.get(SESSION_KEY)
                if settings.SESSION_COOKIE_NAME in request.COOKIES else None)
        if held and request.user.is_authenticated:
            expired = datetime.fromisoformat(held['expires_at']) <= datetime.now(timezone.utc)
            if expired or not token_valid(held['token']):
                LOG.info('Keystone session of %s ended: token %s', held['user'],
                         'expired' if expired else 'no longer valid')
                logout(request)
                messages.warning(request, 'Your Keystone sign-in has ended (the token expired '
                                          'or was revoked): sign in again.')
        return self.get_response(request)
