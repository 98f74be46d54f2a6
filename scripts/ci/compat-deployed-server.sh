#!/usr/bin/env bash
# Server command for ../shared/compat/run.py (through compat-db-server.sh's
# COMPAT_PROJECT_SERVER): the service deployed as a deployment tool deploys
# Placement. A placement.conf names the database as oslo.db writes it
# (mysql+pymysql://, postgresql://), with a policy file beside it, proxy
# headers parsing and sync_on_startup; uWSGI serves it with the documented
# ini (docs/deploy/placement-api-uwsgi.ini) on the harness's PORT. The
# harness's own PLACEMENT_* variables still win over the file, as in any
# deployment. COMPAT_DEPLOYED_FRONT=apache serves it as kolla does instead:
# Debian's Apache with mod_wsgi and docs/deploy/placement-api-apache.conf,
# from .venv-apache (scripts/ci/test-setup.sh; on MariaDB add the driver:
# .venv-apache/bin/pip install -r requirements-mysql.txt), its workers as
# www-data.
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
unset DATABASE_URL
export OS_PLACEMENT_CONFIG_DIR=$conf_dir
if [ "${COMPAT_DEPLOYED_FRONT:-uwsgi}" = apache ]; then
    # www-data reads the file and writes the generated secret key.
    chmod 755 "$conf_dir" "$(dirname "$conf_dir")"
    mkdir -p "$conf_dir/data" && chown www-data:www-data "$conf_dir/data"
    printf '\n[django]\ndata_dir = %s/data\n' "$conf_dir" >> "$conf_dir/placement.conf"
    modules=/usr/lib/apache2/modules
    {
        printf 'ServerRoot /etc/apache2\nServerName localhost\nUser www-data\nGroup www-data\n'
        printf 'PidFile %s/apache.pid\nMutex file:%s\nDefaultRuntimeDir %s\n' \
            "$conf_dir" "$conf_dir" "$conf_dir"
        printf 'ErrorLog %s/apache-error.log\n' "$conf_dir"
        for module in mpm_event authz_core wsgi; do
            printf 'LoadModule %s_module %s/mod_%s.so\n' "$module" "$modules" "$module"
        done
        sed -e "s#/opt/placement/venv#$PWD/.venv-apache#g" \
            -e 's/user=placement group=placement/user=www-data group=www-data/' \
            -e "s/^Listen 8780/Listen 127.0.0.1:$PORT/" -e "s/\*:8780/*:$PORT/" \
            docs/deploy/placement-api-apache.conf
    } > "$conf_dir/httpd.conf"
    exec /usr/sbin/apache2 -f "$conf_dir/httpd.conf" -DFOREGROUND
fi
sed "s/^http-socket = .*/http-socket = 127.0.0.1:$PORT/" docs/deploy/placement-api-uwsgi.ini > "$conf_dir/uwsgi.ini"
exec .venv/bin/uwsgi --ini "$conf_dir/uwsgi.ini" --logto "$conf_dir/uwsgi.log"
