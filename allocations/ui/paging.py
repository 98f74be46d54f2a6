"""Every list of the dashboards a page at a time, whatever the size of the
cloud: `page` and `per_page` (20 to 500) from the query string."""
from django.core.paginator import Paginator

PAGE_SIZE = 50
PAGE_SIZES = (20, 50, 100, 200, 500)   # the sizes offered; any from 20 to 500 is taken


def page_of(request, items, param='page'):
    """The page of `items` the request asks for in `param` (PAGE_SIZE rows
    unless `per_page` says otherwise); a page of several lists names each
    list's page its own way."""
    try:
        size = min(max(int(request.GET.get('per_page', PAGE_SIZE)), PAGE_SIZES[0]),
                   PAGE_SIZES[-1])
    except ValueError:
        size = PAGE_SIZE
    return Paginator(items, size).get_page(request.GET.get(param))
