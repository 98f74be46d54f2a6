"""Authorization with oslo.policy, using OpenStack Placement's rule names.

The defaults are Placement's: admin or service for everything, project
readers may read their own project's usages, and every rule is
project-scoped (a system-scoped token gets 403). With
PLACEMENT_ENFORCE_NEW_DEFAULTS off the deprecated 'role:admin' defaults are
accepted as well. PLACEMENT_POLICY_FILE (YAML or JSON) overrides any rule.
"""
import threading

from django.conf import settings
from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from placement_site import errors

ADMIN = 'rule:admin_api'
ADMIN_OR_SERVICE = 'rule:admin_or_service_api'
SERVICE = 'rule:service_api'
ADMIN_OR_PROJECT_READER_OR_SERVICE = 'rule:admin_or_project_reader_or_service_api'
PROJECT = ['project']

_DEPRECATED_ADMIN = oslo_policy.DeprecatedRule(
    name='rule:admin_api', check_str='role:admin',
    deprecated_reason='Placement policies use new default roles with scope.',
    deprecated_since='W')

BASE_RULES = [
    oslo_policy.RuleDefault('admin_api', 'role:admin',
                            description='Default rule for most placement APIs.',
                            scope_types=PROJECT),
    oslo_policy.RuleDefault('service_api', 'role:service',
                            description='Default rule for service-to-service APIs.',
                            scope_types=PROJECT, deprecated_rule=_DEPRECATED_ADMIN),
    oslo_policy.RuleDefault('admin_or_service_api', 'role:admin or role:service',
                            description='Default rule for most placement APIs.',
                            scope_types=PROJECT, deprecated_rule=_DEPRECATED_ADMIN),
    oslo_policy.RuleDefault('project_reader_api',
                            'role:reader and project_id:%(project_id)s',
                            description='Default rule for project level reader APIs.',
                            deprecated_rule=_DEPRECATED_ADMIN),
    oslo_policy.RuleDefault('admin_or_project_reader_or_service_api',
                            'role:admin or rule:project_reader_api or role:service',
                            description='Default rule for project level reader APIs.',
                            scope_types=PROJECT, deprecated_rule=_DEPRECATED_ADMIN),
]

# (rule name, default check, method, path)
API_RULES = [
    ('placement:resource_providers:list', ADMIN_OR_SERVICE, 'GET', '/resource_providers'),
    ('placement:resource_providers:create', ADMIN_OR_SERVICE, 'POST', '/resource_providers'),
    ('placement:resource_providers:show', ADMIN_OR_SERVICE, 'GET', '/resource_providers/{uuid}'),
    ('placement:resource_providers:update', ADMIN_OR_SERVICE, 'PUT', '/resource_providers/{uuid}'),
    ('placement:resource_providers:delete', ADMIN_OR_SERVICE, 'DELETE',
     '/resource_providers/{uuid}'),
    ('placement:resource_classes:list', ADMIN_OR_SERVICE, 'GET', '/resource_classes'),
    ('placement:resource_classes:create', ADMIN_OR_SERVICE, 'POST', '/resource_classes'),
    ('placement:resource_classes:show', ADMIN_OR_SERVICE, 'GET', '/resource_classes/{name}'),
    ('placement:resource_classes:update', ADMIN_OR_SERVICE, 'PUT', '/resource_classes/{name}'),
    ('placement:resource_classes:delete', ADMIN_OR_SERVICE, 'DELETE', '/resource_classes/{name}'),
    ('placement:resource_providers:inventories:list', ADMIN_OR_SERVICE, 'GET',
     '/resource_providers/{uuid}/inventories'),
    ('placement:resource_providers:inventories:create', ADMIN_OR_SERVICE, 'POST',
     '/resource_providers/{uuid}/inventories'),
    ('placement:resource_providers:inventories:show', ADMIN_OR_SERVICE, 'GET',
     '/resource_providers/{uuid}/inventories/{resource_class}'),
    ('placement:resource_providers:inventories:update', ADMIN_OR_SERVICE, 'PUT',
     '/resource_providers/{uuid}/inventories'),
    ('placement:resource_providers:inventories:delete', ADMIN_OR_SERVICE, 'DELETE',
     '/resource_providers/{uuid}/inventories'),
    ('placement:resource_providers:aggregates:list', ADMIN_OR_SERVICE, 'GET',
     '/resource_providers/{uuid}/aggregates'),
    ('placement:resource_providers:aggregates:update', ADMIN_OR_SERVICE, 'PUT',
     '/resource_providers/{uuid}/aggregates'),
    ('placement:resource_providers:usages', ADMIN_OR_SERVICE, 'GET',
     '/resource_providers/{uuid}/usages'),
    ('placement:usages', ADMIN_OR_PROJECT_READER_OR_SERVICE, 'GET', '/usages'),
    ('placement:traits:list', ADMIN_OR_SERVICE, 'GET', '/traits'),
    ('placement:traits:show', ADMIN_OR_SERVICE, 'GET', '/traits/{name}'),
    ('placement:traits:update', ADMIN_OR_SERVICE, 'PUT', '/traits/{name}'),
    ('placement:traits:delete', ADMIN_OR_SERVICE, 'DELETE', '/traits/{name}'),
    ('placement:resource_providers:traits:list', ADMIN_OR_SERVICE, 'GET',
     '/resource_providers/{uuid}/traits'),
    ('placement:resource_providers:traits:update', ADMIN_OR_SERVICE, 'PUT',
     '/resource_providers/{uuid}/traits'),
    ('placement:resource_providers:traits:delete', ADMIN_OR_SERVICE, 'DELETE',
     '/resource_providers/{uuid}/traits'),
    ('placement:allocations:manage', ADMIN_OR_SERVICE, 'POST', '/allocations'),
    ('placement:allocations:list', ADMIN_OR_SERVICE, 'GET', '/allocations/{consumer_uuid}'),
    ('placement:allocations:update', ADMIN_OR_SERVICE, 'PUT', '/allocations/{consumer_uuid}'),
    ('placement:allocations:delete', ADMIN_OR_SERVICE, 'DELETE', '/allocations/{consumer_uuid}'),
    ('placement:resource_providers:allocations:list', ADMIN_OR_SERVICE, 'GET',
     '/resource_providers/{uuid}/allocations'),
    ('placement:allocation_candidates:list', ADMIN_OR_SERVICE, 'GET', '/allocation_candidates'),
    ('placement:reshaper:reshape', SERVICE, 'POST', '/reshaper'),
    # Not part of OpenStack Placement: the event log, for operators.
    ('placement:events:list', ADMIN, 'GET', '/events'),
    # Not part of OpenStack Placement: pods and pod bindings. Services
    # (a scheduler) read pods and ask for bindings; admins change pods and
    # override bindings.
    ('placement:pods:list', ADMIN_OR_SERVICE, 'GET', '/pods'),
    ('placement:pods:create', ADMIN, 'POST', '/pods'),
    ('placement:pods:show', ADMIN_OR_SERVICE, 'GET', '/pods/{uuid}'),
    ('placement:pods:update', ADMIN, 'PUT', '/pods/{uuid}'),
    ('placement:pods:delete', ADMIN, 'DELETE', '/pods/{uuid}'),
    ('placement:pod_bindings:list', ADMIN_OR_SERVICE, 'GET', '/pod_bindings'),
    ('placement:pod_bindings:create', ADMIN_OR_SERVICE, 'POST', '/pod_bindings'),
    ('placement:pod_bindings:override', ADMIN, 'POST', '/pod_bindings'),
    ('placement:pod_bindings:show', ADMIN_OR_SERVICE, 'GET', '/pod_bindings/{uuid}'),
    ('placement:pod_bindings:delete', ADMIN, 'DELETE', '/pod_bindings/{uuid}'),
    # Not part of OpenStack Placement: capacity, "how many more fit" and
    # usage trends for operators' dashboards.
    ('placement:capacity:show', ADMIN_OR_SERVICE, 'GET', '/capacity'),
    ('placement:capacity:trends', ADMIN_OR_SERVICE, 'GET', '/capacity/trends'),
    # Not part of OpenStack Placement: the names admins give pools.
    ('placement:pool_labels:show', ADMIN_OR_SERVICE, 'GET', '/pool_labels/{uuid}'),
    ('placement:pool_labels:update', ADMIN, 'PUT', '/pool_labels/{uuid}'),
    ('placement:pool_labels:delete', ADMIN, 'DELETE', '/pool_labels/{uuid}'),
]


# Not part of OpenStack Placement: what the dashboards (/ui/) show. They
# build on the API's rules, so a policy file narrowing those narrows the
# dashboards too; a system reader (or admin) sees the whole cloud, which
# Placement's API, having dropped system scope, would refuse it.
DASHBOARD_CLOUD = 'placement:dashboards:cloud'
DASHBOARD_PROJECT = 'placement:dashboards:project'
DASHBOARD_RULES = [
    (DASHBOARD_CLOUD, 'rule:placement:resource_providers:list or '
                      '(role:reader and system_scope:all)',
     'See the whole cloud in the dashboards: every provider, pool, pod, project and consumer.',
     '/ui/'),
    (DASHBOARD_PROJECT, 'rule:placement:usages',
     "See a project's own page in the dashboards (its usage, consumers, where they sit and "
     'its pods), the project being the target.', '/ui/projects/{project_id}/'),
]


DASHBOARD_NAMES = frozenset(name for name, *_ in DASHBOARD_RULES)


def rule_defaults():
    documented = [
        oslo_policy.DocumentedRuleDefault(
            name=name, check_str=check, description=f'{method} {path}',
            operations=[{'method': method, 'path': path}], scope_types=PROJECT)
        for name, check, method, path in API_RULES
    ]
    dashboards = [
        oslo_policy.DocumentedRuleDefault(
            name=name, check_str=check, description=description,
            operations=[{'method': 'GET', 'path': path}], scope_types=['system', 'project'])
        for name, check, description, path in DASHBOARD_RULES
    ]
    return BASE_RULES + documented + dashboards


_lock = threading.Lock()
_enforcer = None


def get_enforcer():
    global _enforcer
    with _lock:
        if _enforcer is None:
            _enforcer = _build_enforcer()
        return _enforcer


def reset():
    """Forget the enforcer (tests change the policy settings)."""
    global _enforcer
    with _lock:
        _enforcer = None


def _build_enforcer():
    conf = cfg.ConfigOpts()
    conf([], project='placement', default_config_files=[], default_config_dirs=[])
    policy_opts.set_defaults(conf)
    conf.set_override('enforce_new_defaults', settings.PLACEMENT_ENFORCE_NEW_DEFAULTS,
                      group='oslo_policy')
    # Without PLACEMENT_POLICY_FILE, oslo.policy finds no file (this
    # ConfigOpts has no config directories) and the defaults apply.
    policy_file = settings.PLACEMENT_POLICY_FILE or 'policy.yaml'
    enforcer = oslo_policy.Enforcer(conf, policy_file=policy_file)
    enforcer.suppress_default_change_warnings = True
    enforcer.suppress_deprecation_warnings = True
    enforcer.register_defaults(rule_defaults())
    enforcer.load_rules()
    return enforcer


def authorize(context, rule, target=None):
    """403 unless `context` may perform `rule` on `target`."""
    if target is None:
        target = {'project_id': context.project_id, 'user_id': context.user_id}
    creds = dict(context.to_policy_values())
    if not settings.PLACEMENT_ENFORCE_SCOPE and rule not in DASHBOARD_NAMES:
        # Without scope enforcement a system-scoped token is judged by its
        # roles alone (the dashboards' rules name system scope themselves).
        creds.pop('system_scope', None)
    try:
        get_enforcer().authorize(rule, target, creds, do_raise=True)
    except oslo_policy.InvalidScope:
        # Placement words a scope refusal with the bare rule name.
        raise errors.forbidden(rule)
    except oslo_policy.PolicyNotAuthorized:
        raise errors.forbidden(f'Policy does not allow {rule} to be performed.')


def permits(context, rule, target=None):
    """Whether `context` may perform `rule` on `target` (authorize's
    answer, without raising)."""
    try:
        authorize(context, rule, target)
    except errors.PlacementError:
        return False
    return True
