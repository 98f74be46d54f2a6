"""Who is looking at the dashboards, and what they may see and change.

A Keystone sign-in is judged by Placement's policy engine, with the API's
rule names and the operator's policy file: the whole cloud needs
placement:dashboards:cloud (by default whoever may list providers, or a
system reader), a project's own page placement:dashboards:project on that
project (by default its readers), and every edit in the admin the rule the
API's matching write needs. A local Django account keeps Django's own
means: staff see the whole cloud and edit what their permissions allow
(the "operator read-only" group may view everything and change nothing);
membership of a group named "project:<project id>" gives a project's page.
"""
import functools
from dataclasses import dataclass
from dataclasses import field

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render
from oslo_context import context as oslo_context

from placement_site import policy
from placement_site import replicas
from placement_site import snapshots
from placement_site.operator_groups import PROJECT_GROUP_PREFIX
from placement_site.operator_groups import READ_ONLY_APPS

SESSION_KEY = 'keystone'   # where a Keystone sign-in keeps its token and scope

# The admin's permissions ("app.action_model") and the API rule each
# write needs: add, change, delete. Models not named here are read-only
# to Keystone users.
_WRITES = {
    'providers.resourceprovider': ('placement:resource_providers:create',
                                   'placement:resource_providers:update',
                                   'placement:resource_providers:delete'),
    'providers.inventory': ('placement:resource_providers:inventories:create',
                            'placement:resource_providers:inventories:update',
                            'placement:resource_providers:inventories:delete'),
    'providers.resourceclass': ('placement:resource_classes:create',
                                'placement:resource_classes:update',
                                'placement:resource_classes:delete'),
    'providers.trait': ('placement:traits:update',) * 2 + ('placement:traits:delete',),
    'providers.providertrait': ('placement:resource_providers:traits:update',) * 3,
    'providers.provideraggregate': ('placement:resource_providers:aggregates:update',) * 3,
    'allocations.consumer': ('placement:allocations:manage', 'placement:allocations:update',
                             'placement:allocations:delete'),
    'allocations.allocation': ('placement:allocations:manage', 'placement:allocations:update',
                               'placement:allocations:delete'),
    'pods.pod': ('placement:pods:create', 'placement:pods:update', 'placement:pods:delete'),
    'pods.podbinding': ('placement:pod_bindings:override', 'placement:pod_bindings:override',
                        'placement:pod_bindings:delete'),
}
_ACTIONS = ('add', 'change', 'delete')


def write_rule(perm):
    """The API rule behind a Django permission ('providers.change_trait'),
    None for a view or an edit nothing in the API allows."""
    app, _, codename = perm.partition('.')
    action, _, model = codename.partition('_')
    rules = _WRITES.get(f'{app}.{model}')
    return rules[_ACTIONS.index(action)] if rules and action in _ACTIONS else None


def context_of(held):
    """The policy engine's view of a Keystone sign-in the session holds."""
    return oslo_context.RequestContext(
        user_id=held['user_id'], project_id=held.get('project_id'), roles=held['roles'],
        system_scope='all' if held.get('system') else None)


@dataclass
class Viewer:
    """The signed-in user as the dashboards judge them: `keystone` is the
    session's Keystone sign-in (token, scope, roles), None for a local
    account."""
    user: object
    keystone: dict | None
    _decided: dict = field(default_factory=dict, repr=False)   # admin permissions asked

    @classmethod
    def of(cls, request):
        # The API's views and docs render with no user of Django's.
        user = getattr(request, 'user', None) or AnonymousUser()
        held = request.session.get(SESSION_KEY) if user.is_authenticated else None
        return cls(user, held)

    @functools.cached_property
    def context(self):
        return context_of(self.keystone)

    def permits(self, rule, target=None):
        return self.keystone is not None and policy.permits(self.context, rule, target)

    @functools.cached_property
    def sees_cloud(self):
        if not self.user.is_authenticated or not self.user.is_active:
            return False
        if self.keystone is None:
            return self.user.is_staff
        return self.permits(policy.DASHBOARD_CLOUD)

    def may_read(self, rule):
        """Whether a page showing what an API read answers (the capacity
        report: placement:capacity:show) is theirs: a Keystone sign-in by
        the API's rule, as their token would be judged; a local account
        that sees the whole cloud (staff) reads what an admin token would."""
        if self.keystone is None:
            return self.sees_cloud
        return self.user.is_active and self.permits(rule)

    def sees_project(self, external_id):
        if self.sees_cloud:
            return True
        if self.keystone is not None:
            return self.permits(policy.DASHBOARD_PROJECT,
                                {'project_id': external_id, 'user_id': self.keystone['user_id']})
        return external_id in self.local_projects

    @functools.cached_property
    def local_projects(self):
        if self.keystone is not None or not self.user.is_authenticated:
            return []
        return sorted(name[len(PROJECT_GROUP_PREFIX):] for name in self.user.groups.filter(
            name__startswith=PROJECT_GROUP_PREFIX).values_list('name', flat=True))

    @functools.cached_property
    def project(self):
        """The project whose page is this viewer's own ("my project"):
        the token's project, or a local account's first project group."""
        if self.keystone is not None:
            project = self.keystone.get('project_id')
            return project if project and self.sees_project(project) else None
        return self.local_projects[0] if self.local_projects else None

    def may_change(self, perm):
        """A Django admin permission for a Keystone user: viewing the
        house's models needs the whole cloud, an edit the API rule of the
        matching write; local accounts and sign-in records are not theirs."""
        if perm not in self._decided:
            self._decided[perm] = self._may_change(perm)
        return self._decided[perm]

    def _may_change(self, perm):
        app, _, codename = perm.partition('.')
        if app not in READ_ONLY_APPS:
            return False
        if codename.startswith('view_'):
            return self.sees_cloud
        rule = write_rule(perm)
        return rule is not None and self.permits(rule)


def viewer(request):
    """The request's Viewer, made once."""
    if not hasattr(request, '_viewer'):
        request._viewer = Viewer.of(request)
    return request._viewer


def context(request):
    """Template context: `viewer`."""
    return {'viewer': viewer(request)}


def not_allowed(request, what):
    """The "signed in but not allowed" page (403)."""
    return render(request, 'ui/not_allowed.html', {'what': what}, status=403)


def requires(allowed, what):
    """A dashboards view for viewers `allowed(viewer)` lets in: anyone
    else signed in gets the not-allowed page; the signed-out, the sign-in
    form. What the view reads (and its export as it streams) it reads in
    one snapshot of the database the page reads: a replica's when one is
    healthy, the dashboards being advisory answers."""
    def decorate(view):
        page = replicas.advisory(snapshots.snapshot_reads(view))

        @functools.wraps(view)
        def guarded(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
            if not allowed(viewer(request)):
                return not_allowed(request, what)
            return page(request, *args, **kwargs)
        return guarded
    return decorate


cloud_pages = requires(lambda v: v.sees_cloud, 'the whole cloud')


class PolicyPermissions:
    """Authentication backend answering a Keystone user's admin
    permissions from Placement's policy (see Viewer.may_change); the
    session's sign-in is put on the user by KeystoneSessionMiddleware."""

    def authenticate(self, request, **credentials):
        return None

    def has_perm(self, user, perm, obj=None):
        viewer = _signed_in_viewer(user)
        return viewer is not None and viewer.may_change(perm)

    def has_module_perms(self, user, app_label):
        viewer = _signed_in_viewer(user)
        return app_label in READ_ONLY_APPS and viewer is not None and viewer.sees_cloud


def _signed_in_viewer(user):
    """The Viewer of a Keystone-signed-in user, made once per request (an
    admin page asks dozens of permissions)."""
    held = getattr(user, 'keystone_signin', None)
    if held is None or not user.is_active:
        return None
    if getattr(user, '_policy_viewer', None) is None:
        user._policy_viewer = Viewer(user, held)
    return user._policy_viewer
