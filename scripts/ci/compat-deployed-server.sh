#!/usr/bin/env bash
# Server command for ../shared/compat/run.py (through compat-db-server.sh's
# COMPAT_PROJECT_SERVER): the service deployed as a deployment tool deploys
# Placement. A placement.conf names the database as oslo.db writes it
# (mysql+pymysql://, postgresql://), with a policy file beside it, proxy
# headers parsing and sync_on_startup; uWSGI serves it with the documented
# ini (docs/deploy/placement-api-uwsgi.ini) on the harness's PORT. The
# harness's own PLACEMENT_* variables still win over the file, as in any
# deployment.
set -euo pipefail
: "${PORT:?PORT must be set}" "${DATABASE_URL:?DATABASE_URL must be set}"
cd "$(dirname "$0")/../.."
# In the harness's directory for the file (compat-db-server.sh), removed with it.
conf_dir=${COMPAT_WORKDIR:-$(mktemp -d /tmp/placement-deployed-XXXXXXXX)}/deployed
mkdir -p "$conf_dir"
case "$DATABASE_URL" in
    mysql://*) connection="mysql+pymysql://${DATABASE_URL#mysql://}" ;;
    *) connection=$DATABASE_URL ;;
esac
printf '{}\n' > "$conf_dir/policy.yaml"
cat > "$conf_dir/placement.conf" <<CONF
[DEFAULT]
debug = false

[api]
auth_strategy = noauth2

[placement_database]
connection = $connection
max_pool_size = 10
sync_on_startup = true

[oslo_policy]
policy_file = policy.yaml

[oslo_middleware]
enable_proxy_headers_parsing = true
CONF
sed "s/^http-socket = .*/http-socket = 127.0.0.1:$PORT/" docs/deploy/placement-api-uwsgi.ini > "$conf_dir/uwsgi.ini"
unset DATABASE_URL
export OS_PLACEMENT_CONFIG_DIR=$conf_dir
exec .venv/bin/uwsgi --ini "$conf_dir/uwsgi.ini" --logto "$conf_dir/uwsgi.log"
