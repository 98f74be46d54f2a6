"""The admin machinery both apps' admins share: an admin whose writes are
service calls (a domain refusal becomes an error message, never a 500, and
changes nothing; a write the database aborted is rerun, as the API's are),
read-only admins and inlines, sortable count columns and links between
changelists.

Nothing here lists a relation that grows with the cloud whole (an
aggregate's members, a project's consumers): a page shows a few rows and
links to the filtered changelist, which is paged."""
from django.contrib import admin
from django.contrib import messages
from django.contrib.admin import actions as admin_actions
from django.contrib.admin.utils import quote
from django.contrib.admin.utils import unquote
from django.db import transaction
from django.db.models import Exists
from django.db.models import OuterRef
from django.forms.models import BaseInlineFormSet
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.html import format_html_join
from django.utils.http import urlencode
from django.utils.text import smart_split
from django.utils.text import unescape_string_literal
from django.utils.translation import gettext_lazy

from placement_site import exceptions
from placement_site.retries import retried

# The rows of a growing relation a page shows before linking to all of them.
SHOWN = 20


class RelatedOnly(admin.RelatedOnlyFieldListFilter):
    """A filter whose choices are the related objects something refers
    to through the filtered field, found by an EXISTS per choice on the
    table holding the reference (one index probe each) instead of a
    DISTINCT over every row: 180 ms to 4 with 1.2 million provider traits.

    Past MAX_CHOICES choices (a large cloud's projects or aggregates) the
    filter is not offered: a sidebar of thousands is no filter. Its lookup
    still works, for the links from the project's or aggregate's page."""
    MAX_CHOICES = 100

    def field_choices(self, field, request, model_admin):
        if field.many_to_many:  # the link table
            used = field.remote_field.through._default_manager.filter(
                **{field.m2m_reverse_field_name(): OuterRef('pk')})
        else:  # the table whose foreign key it is
            used = field.model._default_manager.filter(**{field.name: OuterRef('pk')})
        related = field.remote_field.model._default_manager.filter(Exists(used))
        ordering = self.field_admin_ordering(field, request, model_admin)
        choices = [(obj.pk, str(obj)) for obj in
                   related.order_by(*ordering)[:self.MAX_CHOICES + 1]]
        return choices if len(choices) <= self.MAX_CHOICES else []

    def has_output(self):
        # In use (from a link), it stays: the changelist applies only the
        # filters it shows, and this one offers "All" to leave it.
        return super().has_output() or bool(self.lookup_val)


def search_words(search_term):
    """The words of an admin search, as ModelAdmin.get_search_results
    splits them (quoted phrases kept whole, their quotes removed)."""
    for word in smart_split(search_term):
        if word.startswith(('"', "'")) and word[0] == word[-1]:
            word = unescape_string_literal(word)
        yield word


def count_column(annotation, description):
    """A sortable list column showing the count annotated as `annotation`
    (see count_of)."""
    @admin.display(description=description, ordering=annotation)
    def column(self, obj):
        return getattr(obj, annotation)
    return column


def changelist_link(model, text, **filters):
    """A link to `model`'s changelist, filtered."""
    opts = model._meta
    url = reverse(f'admin:{opts.app_label}_{opts.model_name}_changelist')
    return format_html('<a href="{}?{}">{}</a>', url, urlencode(filters), text)


def first_links(rows, everything):
    """Links to the change pages of the first SHOWN of `rows` (a queryset),
    then `everything` (a link to all of them) when there are more."""
    first = list(rows[:SHOWN + 1])
    links = [format_html('<a href="{}">{}</a>', change_url(obj), obj) for obj in first[:SHOWN]]
    if len(first) > SHOWN:
        links.append(everything)
    return format_html_join(', ', '{}', ((link,) for link in links)) or None


def change_url(obj):
    opts = obj._meta
    return reverse(f'admin:{opts.app_label}_{opts.model_name}_change', args=[quote(obj.pk)])


def adopt(obj, saved):
    """Make the admin's unsaved `obj` the row a service has just written."""
    for field in obj._meta.concrete_fields:
        setattr(obj, field.attname, getattr(saved, field.attname))
    obj._state.adding = False
    obj._state.db = saved._state.db


class ServiceAdmin(admin.ModelAdmin):
    """An admin whose writes are service calls (save_model, delete_model and
    the inline formsets' save). A domain refusal is shown as an error
    message, never as a 500, and changes nothing.

    A list says how many rows match, not also how many the table holds
    ("Show all" instead of "N total"): that is a second COUNT(*) over the
    whole table on every list page and search (180,000 consumers, 577,000
    allocations at 40,000 compute nodes)."""
    show_full_result_count = False

    def change_refusal(self, obj):
        """Why `obj` may not be edited at all, or None."""
        return None

    def delete_refusal(self, obj):
        """Why `obj` may not be deleted now, or None. Asked before the
        confirmation page; the service decides again when deleting."""
        return None

    def has_change_permission(self, request, obj=None):
        return (super().has_change_permission(request, obj)
                and not (obj is not None and self.change_refusal(obj)))

    def visible(self, request, obj):
        """May the user see why `obj` is refused? (Otherwise Django's own
        permission checks answer.)"""
        return obj is not None and self.has_view_permission(request, obj)

    def refuse(self, request, message, url):
        self.message_user(request, message, messages.ERROR)
        return HttpResponseRedirect(url)

    def cannot_delete(self, obj, reason):
        return f'Cannot delete {self.opts.verbose_name} “{obj}”: {reason}'

    def rerun_aborted(self, request, view):
        """`view()`, a POST, run again whole when the database aborted it (a
        Galera certification failure, a deadlock), as retries.retried reruns
        every API write: the services run inside the admin's transaction,
        so their own reruns cannot. The messages an aborted run queued go
        with it."""
        if request.method != 'POST':
            return view()
        queued = messages.get_messages(request)
        before = list(getattr(queued, '_queued_messages', ()))

        def forget_messages():
            if hasattr(queued, '_queued_messages'):
                queued._queued_messages[:] = before
        return retried(view, before_retry=forget_messages, integrity=False)

    def changeform_view(self, request, object_id=None, form_url='', extra_context=None):
        if request.method == 'POST' and object_id is not None:
            obj = self.get_object(request, unquote(object_id))
            refusal = self.visible(request, obj) and self.change_refusal(obj)
            if refusal:
                return self.refuse(request, refusal, request.get_full_path())
        try:
            return self.rerun_aborted(request, lambda: super(ServiceAdmin, self).changeform_view(
                request, object_id, form_url, extra_context))
        except exceptions.PlacementDomainError as exc:
            # A concurrent change got past the form's checks; the admin's
            # transaction has been rolled back.
            return self.refuse(request, str(exc), request.get_full_path())

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        refusal = self.visible(request, obj) and self.delete_refusal(obj)
        if not refusal:
            try:
                return self.rerun_aborted(request, lambda: super(ServiceAdmin, self).delete_view(
                    request, object_id, extra_context))
            except exceptions.PlacementDomainError as exc:
                refusal = str(exc)
        return self.refuse(request, self.cannot_delete(obj, refusal), change_url(obj))

    def changelist_view(self, request, extra_context=None):
        # A POST here is an action (delete_selected, ending bindings).
        return self.rerun_aborted(request, lambda: super(ServiceAdmin, self).changelist_view(
            request, extra_context))

    def get_deleted_objects(self, objs, request):
        """What else goes with an object is the service's business: list the
        objects themselves; refusals come from delete_refusal and the service."""
        objs = list(objs)
        listed = [format_html('{}: <a href="{}">{}</a>', self.opts.verbose_name.capitalize(),
                              change_url(obj), obj) for obj in objs]
        return listed, {self.opts.verbose_name_plural: len(objs)}, set(), []

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            try:
                self.delete_model(request, obj)
            except exceptions.PlacementDomainError as exc:
                raise exceptions.PlacementDomainError(self.cannot_delete(obj, exc))

    @admin.action(permissions=['delete'],
                  description=gettext_lazy('Delete selected %(verbose_name_plural)s'))
    def delete_selected(self, request, queryset):
        """Django's action, all or nothing: refused as a whole when any
        selected object may not be deleted."""
        refusals = [self.cannot_delete(obj, reason)
                    for obj in queryset if (reason := self.delete_refusal(obj))]
        if not refusals:
            try:
                with transaction.atomic():
                    return admin_actions.delete_selected(self, request, queryset)
            except exceptions.PlacementDomainError as exc:
                refusals = [str(exc)]
        self.message_user(request, ' '.join(['Nothing was deleted.', *refusals]), messages.ERROR)
        return None

    actions = ['delete_selected']


class ReadOnly:
    """Shown, never written here: the services write these rows as part of
    other changes."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(ReadOnly, admin.ModelAdmin):
    show_full_result_count = False   # as ServiceAdmin's


class FirstRowsFormSet(BaseInlineFormSet):
    """The first SHOWN rows only; `more_rows()` is what follows them when
    there are more: the inline's link to all of them (`all_rows`, which
    ReadOnlyInline sets), or their count."""
    more = None

    def get_queryset(self):
        if not hasattr(self, '_first_rows'):
            rows = super().get_queryset()
            self._first_rows = rows[:SHOWN]
            if len(self._first_rows) == SHOWN:
                self.more = rows.count()
        return self._first_rows

    def more_rows(self):
        self.get_queryset()
        if self.more is None or self.more <= SHOWN:
            return None
        return self.all_rows(self.instance, self.more) or f'The first {SHOWN} of {self.more}.'


class ReadOnlyInline(ReadOnly, admin.TabularInline):
    """Read-only rows, the first SHOWN of them, then `all_rows(obj, count)`:
    a link to all of them (by default their count alone)."""
    extra = 0
    can_delete = False
    formset = FirstRowsFormSet
    template = 'admin/edit_inline/first_rows.html'

    def all_rows(self, obj, count):
        return None

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        formset.all_rows = self.all_rows   # a new class each time: this request's inline
        return formset


class YesNoFilter(admin.SimpleListFilter):
    """Yes: rows meeting `condition()`; no: the others."""

    def lookups(self, request, model_admin):
        return (('yes', 'Yes'), ('no', 'No'))

    def condition(self):
        raise NotImplementedError

    def queryset(self, request, queryset):
        if self.value() == 'yes':
            return queryset.filter(self.condition())
        if self.value() == 'no':
            return queryset.exclude(self.condition())
        return queryset
