"""Django admin for consumers, allocations, projects, users, consumer
types and the projects' usage snapshots.

Allocations are read-only here: they are written by schedulers through the
API. The one write is deleting a consumer, which is allocations_delete, as
DELETE /allocations/{consumer_uuid} is.
"""
from django.contrib import admin
from django.db.models import Q

from allocations import services
from allocations.models import Allocation
from allocations.models import Consumer
from allocations.models import ConsumerType
from allocations.models import Project
from allocations.models import ProjectUsageSnapshot
from allocations.models import User
from placement_site import exceptions
from placement_site.admin import ReadOnlyAdmin
from placement_site.admin import ReadOnlyInline
from placement_site.admin import RelatedOnly
from placement_site.admin import ServiceAdmin
from placement_site.admin import changelist_link
from placement_site.admin import count_column
from placement_site.admin import search_words
from placement_site.queries import count_of

UUID_LENGTH = Consumer._meta.get_field('uuid').max_length


class ConsumerTypeFilter(admin.SimpleListFilter):
    """By consumer type; consumers written before 1.38 have none: 'unknown'."""
    title = 'consumer type'
    parameter_name = 'consumer_type'
    field = 'consumer_type'

    def lookups(self, request, model_admin):
        return [*ConsumerType.objects.values_list('pk', 'name'),
                (ConsumerType.UNKNOWN, ConsumerType.UNKNOWN)]

    def queryset(self, request, queryset):
        if self.value() == ConsumerType.UNKNOWN:
            return queryset.filter(**{f'{self.field}__isnull': True})
        if self.value():
            return queryset.filter(**{f'{self.field}_id': self.value()})
        return queryset


class AllocationConsumerTypeFilter(ConsumerTypeFilter):
    field = 'consumer__consumer_type'


class ConsumerAllocationInline(ReadOnlyInline):
    model = Allocation
    fields = ('resource_provider', 'resource_class', 'used', 'created_at')
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related(
            'resource_provider', 'resource_class', 'consumer')

    def all_rows(self, consumer, count):
        return changelist_link(Allocation, f'All {count} allocations',
                               consumer__id__exact=consumer.pk)


@admin.register(Consumer)
class ConsumerAdmin(ServiceAdmin):
    """Consumers are shown with their allocations; deleting one removes all
    its allocations (allocations_delete)."""
    list_display = ('uuid', 'project', 'user', 'type', 'generation', 'allocation_count',
                    'created_at')
    list_select_related = ('project', 'user', 'consumer_type')
    list_filter = (ConsumerTypeFilter, ('project', RelatedOnly))
    search_fields = ('uuid', 'project__external_id', 'user__external_id')
    fields = ('uuid', 'project', 'user', 'type', 'generation', 'created_at', 'updated_at')
    readonly_fields = fields
    inlines = (ConsumerAllocationInline,)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            allocation_count=count_of(Allocation, 'consumer'))

    def get_search_results(self, request, queryset, search_term):
        """search_fields' search, each word a uuid or an owner's id
        containing it, without joining the owners to every consumer: the
        projects and users containing it are found in their own (small)
        tables first, and a whole uuid by the uuid's unique index (a uuid
        field contains a word as long as itself only when it is the word,
        written in the case the services store it in or as given)."""
        for word in search_words(search_term):
            found = Q(uuid__icontains=word) if len(word) < UUID_LENGTH else (
                Q(uuid__in={word, word.lower(), word.upper()}) if len(word) == UUID_LENGTH
                else Q(pk__in=[]))
            for owner, model in (('project', Project), ('user', User)):
                ids = list(model.objects.filter(external_id__icontains=word).values_list(
                    'pk', flat=True))
                if ids:
                    found |= Q(**{f'{owner}_id__in': ids})
            queryset = queryset.filter(found)
        return queryset, False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description='consumer type', ordering='consumer_type__name')
    def type(self, consumer):
        return consumer.consumer_type_name

    allocation_count = count_column('allocation_count', 'allocations')

    def delete_model(self, request, obj):
        if not services.allocations_delete(consumer_uuid=obj.uuid):
            raise exceptions.NotFound(f'Consumer {obj.uuid} holds no allocations.')


@admin.register(Allocation)
class AllocationAdmin(ReadOnlyAdmin):
    list_display = ('consumer', 'resource_provider', 'resource_class', 'used', 'created_at')
    list_select_related = ('consumer', 'resource_provider', 'resource_class')
    list_filter = (('resource_class', RelatedOnly), AllocationConsumerTypeFilter,
                   ('consumer__project', RelatedOnly))
    search_fields = ('consumer__uuid', 'resource_provider__name', 'resource_provider__uuid')


class OwnerAdmin(ReadOnlyAdmin):
    """Projects and users: known by their Keystone ids, recorded when a
    consumer first names them."""
    list_display = ('external_id', 'consumer_count', 'created_at')
    search_fields = ('external_id',)
    fields = ('external_id', 'consumer_list', 'created_at')
    readonly_fields = ('consumer_list',)
    consumer_filter = None

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(consumer_count=count_of(
            Consumer, self.consumer_filter))

    consumer_count = count_column('consumer_count', 'consumers')

    @admin.display(description='consumers')
    def consumer_list(self, owner):
        return changelist_link(Consumer, f'{owner.consumer_count} consumer(s)',
                               **{f'{self.consumer_filter}__id__exact': owner.pk})


@admin.register(Project)
class ProjectAdmin(OwnerAdmin):
    consumer_filter = 'project'


@admin.register(User)
class UserAdmin(OwnerAdmin):
    consumer_filter = 'user'


@admin.register(ConsumerType)
class ConsumerTypeAdmin(ReadOnlyAdmin):
    list_display = ('name', 'consumer_count', 'created_at')
    search_fields = ('name',)
    fields = ('name', 'consumer_list', 'created_at')
    readonly_fields = ('consumer_list',)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            consumer_count=count_of(Consumer, 'consumer_type'))

    consumer_count = count_column('consumer_count', 'consumers')

    @admin.display(description='consumers')
    def consumer_list(self, consumer_type):
        return changelist_link(Consumer, f'{consumer_type.consumer_count} consumer(s)',
                               consumer_type=consumer_type.pk)


@admin.register(ProjectUsageSnapshot)
class ProjectUsageSnapshotAdmin(ReadOnlyAdmin):
    """The projects' usage-trend snapshots, newest first: taken with the
    cloud's and pools' (allocations.project_trends) only."""
    list_display = ('taken_at', 'project', 'resource_class', 'used', 'consumers')
    list_filter = (('resource_class', RelatedOnly), 'taken_at')
    list_select_related = ('project', 'resource_class')
    search_fields = ('=project__external_id',)
    ordering = ('-taken_at', 'project_id', 'resource_class_id')
    date_hierarchy = 'taken_at'
    fields = ('taken_at', 'project', 'resource_class', 'used', 'consumers')
