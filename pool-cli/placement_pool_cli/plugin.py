"""The OpenStackClient plugin interface: how `openstack` finds the pool
commands and builds the client they use.

The API name is `resource_pool`, not `placement`, so the plugin can be
installed next to osc-placement; both talk to the `placement` service type.
openstackclient imports this module on every run: keep it light.
"""
from osc_lib import exceptions
from osc_lib import utils

API_NAME = 'resource_pool'
API_VERSION_OPTION = 'os_resource_pool_api_version'
DEFAULT_API_VERSION = '1'
API_VERSIONS = {'1': 'placement_pool_cli.client.PlacementClient'}
SERVICE_TYPE = 'placement'


def make_client(instance):
    """The Placement client for the ClientManager `instance`: its keystoneauth
    session (token, TLS options) and the placement endpoint, from
    --os-endpoint with admin_token auth or from the service catalog."""
    from placement_pool_cli.client import PlacementClient

    endpoint = instance.get_endpoint_for_service_type(
        SERVICE_TYPE, region_name=instance.region_name, interface=instance.interface)
    if not endpoint:
        raise exceptions.CommandError(
            f'No {SERVICE_TYPE} endpoint found (interface {instance.interface or "public"}, '
            f'region {instance.region_name or "any"}): check the service catalog, or give '
            '--os-endpoint with --os-auth-type admin_token.')
    return PlacementClient(instance.session, endpoint)


def build_option_parser(parser):
    parser.add_argument(
        '--os-resource-pool-api-version', metavar='<version>',
        default=utils.env('OS_RESOURCE_POOL_API_VERSION', default=DEFAULT_API_VERSION),
        help='Resource pool plugin API version (only 1; the plugin always speaks Placement '
             'microversion 1.39). Env: OS_RESOURCE_POOL_API_VERSION')
    return parser
