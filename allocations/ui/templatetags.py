"""Template tags of the dashboards: they only format. One utilization bar,
used everywhere, amounts in their unit, one time format, sort and page
links (the usage-trend charts' data is ui/trend_charts.py's)."""
from datetime import UTC

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from allocations.ui import paging
from placement_site.api import timestamp
from providers import rules

register = template.Library()

# Utilization thresholds shared by every page (fraction of capacity).
WARNING = 0.7
CRITICAL = 0.9


def level(fraction):
    if fraction >= CRITICAL:
        return 'critical'
    if fraction >= WARNING:
        return 'warning'
    return 'ok'


# Classes counted in a binary unit, shown in larger ones when large.
UNITS = {'MEMORY_MB': ('MiB', 'GiB', 'TiB', 'PiB'), 'DISK_GB': ('GiB', 'TiB', 'PiB')}


@register.filter
def amount(value, resource_class=None):
    """A number as people read it: thousands separated, at most two
    decimals, and MEMORY_MB and DISK_GB in GiB, TiB or PiB once they reach
    a unit (6160380 MEMORY_MB: '5.87 TiB')."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return ''
    units = UNITS.get(resource_class)
    if not units:
        return _number(value)
    index = 0
    while abs(value) >= 1024 and index < len(units) - 1:
        value /= 1024
        index += 1
    return f'{_number(value)} {units[index]}'


def _number(value):
    if value == int(value):
        return f'{int(value):,}'
    return f'{value:,.2f}'.rstrip('0').rstrip('.')


def _exact(value):
    """The figure as the API gives it, thousands separated, every decimal kept."""
    if value == int(value):
        return f'{int(value):,}'
    return f'{value:,.6f}'.rstrip('0').rstrip('.')


@register.filter
def change(value):
    """A change in a count, signed and thousands separated ('+2,000',
    '−310', '0'): the what-if page's "after − before"."""
    try:
        value = int(value)
    except (TypeError, ValueError):
        return ''
    return f'+{value:,}' if value > 0 else f'\u2212{-value:,}' if value < 0 else '0'


@register.filter
def in_unit(value, resource_class=None):
    """An amount of a resource class as the pages print it (amount()), with
    the exact figure in its title and data-exact: admins check it against
    the API."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return ''
    return format_html('<span class="amount" title="{} {}" data-exact="{}">{}</span>',
                       _exact(value), resource_class or '', f'{value:.15g}',
                       amount(value, resource_class))


@register.filter
def when(moment):
    """A time as every dashboard prints it: '2026-11-28 19:04 UTC'."""
    if not moment:
        return ''
    return moment.astimezone(UTC).strftime('%Y-%m-%d %H:%M UTC')


@register.simple_tag
def utilization_bar(used, capacity, reserved=0, width=160, threshold=None, resource_class=None):
    """An SVG bar of used against capacity, coloured by level, with the
    numbers (and what is reserved) in its title, in the class's units. With
    a `threshold` (a percent, as pods have), a marker stands at the
    threshold and a bar that reached it is critical."""
    capacity = float(capacity or 0)
    used = float(used or 0)
    fraction = rules.utilization(used, capacity) or 0.0
    used_width = min(fraction, 1.0) * width

    def shown(value):
        return amount(value, resource_class)
    title = f'{shown(used)} of {shown(capacity)} used ({fraction:.0%})'
    if reserved:
        title += f', {shown(reserved)} reserved'
    # An inventory lowered below what is allocated (Placement accepts it).
    over = used > capacity
    if over:
        title += f', over capacity by {shown(used - capacity)}'
    lvl = level(fraction)
    marker = ''
    if threshold is not None:
        threshold = float(threshold)
        # As the pods' selection reads it (selection.PodBooks.percent).
        percent = rules.percent(used, capacity)
        reached = percent is not None and percent >= threshold
        title += f', threshold {threshold:g}%' + (' reached' if reached else '')
        lvl = 'critical' if reached else lvl
        marker = format_html('<rect class="bar-threshold" x="{}" width="2" height="16"/>',
                             f'{min(threshold / 100, 1.0) * width - 1:.1f}')
    return format_html(
        '<svg class="bar" width="{w}" height="{h}" role="img" aria-label="{t}" '
        'data-used="{du}" data-capacity="{dc}">'
        '<title>{t}</title>'
        '<rect class="bar-free" y="{y}" width="{w}" height="12" rx="2"/>'
        '<rect class="bar-{lvl}" y="{y}" width="{uw}" height="12" rx="2"/>{m}</svg>'
        ' <span class="pct pct-{lvl}">{p}</span>{o}',
        du=f'{used:.15g}', dc=f'{capacity:.15g}', w=width, h=16 if marker else 12,
        y=2 if marker else 0, t=title, lvl=lvl,
        uw=f'{used_width:.1f}', m=marker, p=f'{fraction:.0%}',
        o=mark_safe(' <strong class="over-capacity">over capacity</strong>') if over else '')


@register.simple_tag(takes_context=True)
def sort_link(context, field, label):
    """A column header that sorts the current table (toggling direction)."""
    request = context['request']
    query = request.GET.copy()
    current = query.get('sort', '')
    query['sort'] = f'-{field}' if current == field else field
    query.pop('page', None)
    arrow = ' ▲' if current == field else (' ▼' if current == f'-{field}' else '')
    return format_html('<a href="?{}">{}{}</a>', query.urlencode(), label, arrow)


@register.simple_tag
def page_sizes():
    return paging.PAGE_SIZES


@register.simple_tag(takes_context=True)
def page_link(context, page_number, per_page=None):
    """The current query at another page (and page size) of the list whose
    page is `page_param` in the context ('page' unless a page of several
    lists says otherwise)."""
    query = context['request'].GET.copy()
    query[context.get('page_param') or 'page'] = page_number
    if per_page is not None:
        query['per_page'] = per_page
    return '?' + query.urlencode()


@register.simple_tag(takes_context=True)
def export_links(context, table=None):
    """Links to the current list, filtered and sorted, as CSV and JSON
    (allocations.ui.exports), every row, not one page; `table` names the
    list on a page of several."""
    query = context['request'].GET.copy()
    for key in [key for key in query if key in ('page', 'per_page') or key.endswith('_page')]:
        query.pop(key)
    if table:
        query['table'] = table
    links = []
    for form in ('csv', 'json'):
        query['export'] = form
        links.append(format_html('<a href="?{}" data-export="{}">{}</a>', query.urlencode(),
                                 form, form.upper()))
    return format_html('<span class="exports">export: {} · {}</span>', *links)


@register.filter
def dictget(mapping, key):
    """mapping[key], or an empty string."""
    return mapping.get(key, '') if mapping else ''


@register.filter
def api_time(moment):
    """A time as the pod API writes it (UTC, microseconds, 'Z'), for data-*
    attributes; pages show when()."""
    return timestamp(moment) or ''
