"""The environment of a process started by a test that reads placement.conf:
this process's, without the variables the file would set (the test's own
DATABASE_URL would win over the file)."""
import os

from placement_site import placement_conf


def clean_environment(**extra):
    """This process's environment without the variables placement.conf sets."""
    options = {variable for section in placement_conf.HONOURED.values()
               for _, variable, _ in section.values()}
    env = {name: value for name, value in os.environ.items()
           if name not in options and not name.startswith('KEYSTONE_AUTHTOKEN_')
           and name not in ('DJANGO_SETTINGS_MODULE', placement_conf.FILES_VARIABLE)}
    return {**env, **extra}
