"""/resource_classes[/{name}]: the standard and custom resource classes."""
from placement_site import errors
from placement_site import exceptions
from placement_site import microversion
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import json_body
from placement_site.api import parse_json
from placement_site.api import require_json
from placement_site.api import validate
from placement_site.api import versions
from placement_site.errors import Worded
from placement_site.errors import worded
from placement_site.openapi import CLASS_NAME_SCHEMA
from placement_site.openapi import CUSTOM_NAME_SCHEMA
from placement_site.openapi import LINKS
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import link
from placement_site.openapi import operation
from placement_site.openapi import path
from placement_site.openapi import request_body
from placement_site.queries import storable
from placement_site.validation import CUSTOM_NAME_PATTERN
from placement_site.validation import NAME_PATTERN
from providers import schemas
from providers import services
from providers.api import serializers
from providers.models import ResourceClass

# ---- the answers, bodies and parameters the operations describe ----------------------

RESOURCE_CLASS = Component('ResourceClass', closed({
    'type': 'object',
    'properties': {
        'name': {'type': 'string', 'pattern': NAME_PATTERN, 'example': 'CUSTOM_FPGA'},
        'links': LINKS,
    },
    'required': ['name', 'links'],
}))

RESOURCE_CLASS_LIST = Component('ResourceClassList', closed({
    'type': 'object',
    'properties': {'resource_classes': {'type': 'array', 'items': RESOURCE_CLASS}},
    'required': ['resource_classes'],
}))

RESOURCE_CLASS_CREATE = request_body('ResourceClassCreate', schemas.RESOURCE_CLASS_POST)
RESOURCE_CLASS_RENAME = request_body('ResourceClassRename', schemas.RESOURCE_CLASS_PUT_BY_VERSION,
                                     'Before 1.7 only: the new name.')

CLASS_NAME = path('name', 'The name of the resource class.', CLASS_NAME_SCHEMA)
CUSTOM_CLASS_NAME = path('name', 'The name of a custom resource class.', CUSTOM_NAME_SCHEMA)

CLASSES = 'Resource classes'


class ResourceClassViewSet(PlacementViewSet):
    """/resource_classes[/{name}]"""
    POLICY = 'placement:resource_classes:%s'

    def _find(self, name):
        found = ResourceClass.objects.filter(name=name).first() if storable(name) else None
        if found is None:
            # Placement's generic 404, without Vary.
            errors.raise_worded(exceptions.ResourceClassNotFound(name=name), vary=False)
        return found

    @operation(
        'listResourceClasses', tag=CLASSES, summary='List resource classes',
        description='Standard and custom resource classes.',
        responses={200: (RESOURCE_CLASS_LIST, 'The resource classes.')},
    )
    @versions('1.2')
    @accept_json
    def list(self, request):
        self.authorize(self.POLICY % 'list')
        classes = list(ResourceClass.objects.all())
        body = {'resource_classes': [serializers.resource_class(request, rc) for rc in classes]}
        return self.respond(body, last_modified=serializers.latest(classes))

    @operation(
        'createResourceClass', tag=CLASSES, summary='Create a custom resource class',
        description='A new custom resource class; the name starts with `CUSTOM_`.',
        request=RESOURCE_CLASS_CREATE,
        responses={201: (None, 'Created; no body.')},
        links={201: {name: link(name, text, name='$request.body#/name') for name, text in (
            ('showResourceClass', 'The class.'), ('updateResourceClass', 'Verify it.'),
            ('deleteResourceClass', 'Delete it.'))}},
        location=[201], accept_json=False,
        errors={409: 'The resource class exists.'},
    )
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

    @operation(
        'showResourceClass', tag=CLASSES, summary='Show a resource class',
        description='One resource class.', parameters=[CLASS_NAME],
        responses={200: (RESOURCE_CLASS, 'The resource class.')},
        errors={404: 'No such resource class.'},
    )
    @versions('1.2')
    @accept_json
    def retrieve(self, request, name):
        self.authorize(self.POLICY % 'show')
        rc = self._find(name)
        return self.respond(serializers.resource_class(request, rc),
                            last_modified=rc.updated_at or rc.created_at)

    @operation(
        'updateResourceClass', tag=CLASSES, summary='Create or verify a custom resource class',
        description='From 1.7: create the custom class if missing (201) or confirm it exists '
                    '(204); no body. Before 1.7: rename a custom class to the name in the '
                    'body (200).',
        parameters=[CUSTOM_CLASS_NAME], request=RESOURCE_CLASS_RENAME,
        responses={
            200: microversion.before((1, 7), (RESOURCE_CLASS, 'Before 1.7: the renamed class.')),
            201: microversion.since((1, 7), (None, 'From 1.7: created.')),
            204: microversion.since((1, 7), (None, 'From 1.7: the class exists.')),
        },
        location=[201, 204], cached=[], accept_json=False,
        errors={400: f'The name is not a custom class name (`{CUSTOM_NAME_PATTERN}`), or '
                     '(before 1.7) names a standard class.',
                404: microversion.before((1, 7), 'Before 1.7: no such resource class.'),
                409: microversion.before((1, 7), 'Before 1.7: a class with the new name exists.')},
        changes={'1.7': 'create-or-verify without a body, instead of renaming.'},
    )
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

    @operation(
        'deleteResourceClass', tag=CLASSES, summary='Delete a custom resource class',
        description='Delete a custom resource class no inventory uses.',
        parameters=[CUSTOM_CLASS_NAME],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={400: 'A standard class cannot be deleted.', 404: 'No such resource class.',
                409: 'Inventories of this class exist.'},
    )
    @versions('1.2')
    def destroy(self, request, name):
        self.authorize(self.POLICY % 'delete')
        rc = self._find(name)
        refused = 'Error in delete resource class: {error}'
        with worded({exceptions.ResourceClassCannotDeleteStandard: refused,
                     exceptions.ResourceClassInUse: refused}):
            services.resource_class_delete(resource_class=rc)
        return self.no_content()
