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


class Counted:
    """A queryset as a Paginator and an export read it (counted, sliced,
    iterated), counted by `count()`: the same number as COUNT(*) over the
    queryset, from a cheaper query."""
    ordered = True

    def __init__(self, queryset, count):
        self.queryset, self._count, self._counted = queryset, count, None

    def count(self):
        if self._counted is None:
            self._counted = self._count()
        return self._counted

    def __len__(self):
        return self.count()

    def __getitem__(self, key):
        return self.queryset[key]

    def __iter__(self):
        return iter(self.queryset)

    def iterator(self, chunk_size=None):
        return self.queryset.iterator(chunk_size=chunk_size)

    def values_list(self, *fields):
        return self.queryset.values_list(*fields)
