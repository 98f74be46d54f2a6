"""/resource_classes[/{name}]: the standard and custom resource classes."""
from placement_site import errors, exceptions
from placement_site.api import (
    PlacementViewSet,
    accept_json,
    json_body,
    parse_json,
    require_json,
    validate,
    versions,
)
from placement_site.errors import Worded, worded
from placement_site.queries import storable
from providers import schemas, services
from providers.api import serializers
from providers.models import ResourceClass


class ResourceClassViewSet(PlacementViewSet):
    """/resource_classes[/{name}]"""
    POLICY = 'placement:resource_classes:%s'

    def _find(self, name):
        found = ResourceClass.objects.filter(name=name).first() if storable(name) else None
        if found is None:
            # Placement's generic 404, without Vary.
            raise errors.not_found(str(exceptions.ResourceClassNotFound(name=name)), vary=False)
        return found

    @versions('1.2')
    @accept_json
    def list(self, request):
        self.authorize(self.POLICY % 'list')
        classes = list(ResourceClass.objects.all())
        body = {'resource_classes': [serializers.resource_class(request, rc) for rc in classes]}
        return self.respond(body, last_modified=serializers.latest(classes))

    @versions('1.2')
    @require_json
    def create(self, request):
        self.authorize(self.POLICY % 'create')
        data = json_body(request, schemas.RESOURCE_CLASS_POST)
        with worded({
            exceptions.ResourceClassExists: 'Conflicting resource class already exists: {name}',
            # Retries ran out: Placement's plain conflict, no code, never a 412.
            exceptions.ConcurrentUpdate: Worded(
                'Max retries of DB transaction exceeded attempting to create resource class: '
                '{name}, please try again.', code=errors.DEFAULT, stale=False),
        }, name=data['name']):
            rc = services.resource_class_create(name=data['name'])
        return self.no_content(status=201,
                               location=serializers.resource_class_url(request, rc.name))

    @versions('1.2')
    @accept_json
    def retrieve(self, request, name):
        self.authorize(self.POLICY % 'show')
        rc = self._find(name)
        return self.respond(serializers.resource_class(request, rc),
                            last_modified=rc.updated_at or rc.created_at)

    @versions('1.2')
    def update(self, request, name):
        if self.version.matches((1, 7)):
            return self._ensure(request, name)
        return self._rename(request, name)

    @require_json
    def _rename(self, request, name):
        """PUT before 1.7: rename a custom class."""
        self.authorize(self.POLICY % 'update')
        data = json_body(request, schemas.RESOURCE_CLASS_PUT_BY_VERSION.at(self.version))
        rc = self._find(name)
        with worded({
            exceptions.ResourceClassExists: 'Resource class already exists: {new_name}',
            exceptions.ResourceClassCannotUpdateStandard:
                'Cannot update standard resource class {name}',
        }, name=name, new_name=data['name']):
            rc = services.resource_class_rename(resource_class=rc, name=data['name'])
        return self.respond(serializers.resource_class(request, rc), cache_headers=False)

    def _ensure(self, request, name):
        """PUT from 1.7: create the custom class, or confirm it exists."""
        self.authorize(self.POLICY % 'update')
        # The name is validated as the body {"name": ...} would be, quirks
        # included: a name that breaks the JSON is "Malformed JSON".
        data = parse_json('{"name": "%s"}' % name)
        validate(data, schemas.RESOURCE_CLASS_PUT, 'JSON does not validate: {}')
        rc, created = services.resource_class_ensure(name=name)
        return self.no_content(status=201 if created else 204,
                               location=serializers.resource_class_url(request, rc.name))

    @versions('1.2')
    def destroy(self, request, name):
        self.authorize(self.POLICY % 'delete')
        rc = self._find(name)
        refused = 'Error in delete resource class: {error}'
        with worded({exceptions.ResourceClassCannotDeleteStandard: refused,
                     exceptions.ResourceClassInUse: refused}):
            services.resource_class_delete(resource_class=rc)
        return self.no_content()
