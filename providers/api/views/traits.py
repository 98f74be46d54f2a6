"""/traits[/{name}]: the standard and custom traits."""
from placement_site import errors
from placement_site import exceptions
from placement_site.api import PlacementViewSet
from placement_site.api import accept_json
from placement_site.api import query_params
from placement_site.api import validate
from placement_site.api import versions
from placement_site.openapi import CUSTOM_NAME_SCHEMA
from placement_site.openapi import TRAIT_NAME_SCHEMA
from placement_site.openapi import Component
from placement_site.openapi import closed
from placement_site.openapi import link
from placement_site.openapi import operation
from placement_site.openapi import path
from placement_site.openapi import query
from placement_site.queries import storable
from placement_site.validation import CUSTOM_NAME_PATTERN
from providers import schemas
from providers import services
from providers.api import serializers
from providers.models import Trait

# ---- the answer and parameters the operations describe -------------------------------

TRAIT_LIST = Component('TraitList', closed({
    'type': 'object',
    'properties': {'traits': {'type': 'array', 'items': {'type': 'string'}}},
    'required': ['traits'],
}))

TRAIT_NAME = path('name', 'The name of the trait.', TRAIT_NAME_SCHEMA)
CUSTOM_TRAIT_NAME = path('name', 'The name of a custom trait.', CUSTOM_NAME_SCHEMA)

TRAIT_QUERY = [
    query('name', 'Filter by name: `in:NAME1,NAME2` or `startswith:PREFIX`.',
          {'type': 'string', 'pattern': '^(in|startswith):', 'example': 'startswith:CUSTOM_'}),
    query('associated', '`true`: only traits some provider has; `false`: only traits no '
          'provider has.', {'type': 'string', 'enum': ['true', 'false']}),
]


class TraitViewSet(PlacementViewSet):
    """/traits[/{name}]"""
    POLICY = 'placement:traits:%s'

    @operation(
        'listTraits', tag='Traits', summary='List traits',
        description='Standard and custom traits, optionally filtered. Any other query '
                    'parameter is a 400.',
        parameters=TRAIT_QUERY, query_schema=schemas.TRAIT_LIST_QUERY,
        responses={200: (TRAIT_LIST, 'The trait names.')},
        errors={400: 'A badly formatted `name` or `associated`.'},
    )
    @versions('1.6')
    @accept_json
    def list(self, request):
        self.authorize(self.POLICY % 'list')
        params = query_params(request, schemas.TRAIT_LIST_QUERY)
        traits = Trait.objects.all()
        if 'name' in params:
            op, sep, value = params['name'].partition(':')
            if not sep:
                raise errors.bad_request(
                    'Badly formatted name parameter. Expected name query string parameter in '
                    'form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "%s"' % params['name'])
            if op == 'in':
                traits = traits.filter(name__in=[n for n in value.split(',') if storable(n)])
            elif op == 'startswith':
                traits = (traits.filter(name__startswith=value) if storable(value)
                          else traits.none())
        if 'associated' in params:
            associated = params['associated'].lower()
            if associated not in ('true', 'false'):
                raise errors.bad_request(
                    'The query parameter "associated" only accepts "true" or "false"')
            if associated == 'true':
                traits = traits.filter(providers__isnull=False).distinct()
            else:
                traits = traits.filter(providers__isnull=True)
        traits = list(traits)
        return self.respond({'traits': [t.name for t in traits]},
                            last_modified=serializers.latest(traits))

    def _find(self, name):
        trait = Trait.objects.filter(name=name).first() if storable(name) else None
        if trait is None:
            raise exceptions.TraitNotFound(names=name)
        return trait

    @operation(
        'showTrait', tag='Traits', summary='Check a trait exists',
        description='204 if the trait exists.', parameters=[TRAIT_NAME],
        responses={204: (None, 'The trait exists.')}, cached=[204], accept_json=False,
        errors={404: 'No such trait.'},
    )
    @versions('1.6')
    def retrieve(self, request, name):
        self.authorize(self.POLICY % 'show')
        trait = self._find(name)
        return self.no_content(last_modified=trait.created_at, cache_headers=True)

    @operation(
        'updateTrait', tag='Traits', summary='Create or verify a custom trait',
        description='Create the custom trait if missing (201) or confirm it exists (204).',
        parameters=[CUSTOM_TRAIT_NAME],
        responses={201: (None, 'Created.'), 204: (None, 'The trait exists.')},
        links={status: {name: link(name, text, name='$request.path.name') for name, text in (
            ('showTrait', 'Check it exists.'), ('deleteTrait', 'Delete it.'))}
            for status in (201, 204)},
        location=[201, 204], cached=[201, 204], accept_json=False,
        errors={400: f'Not a custom trait name (`{CUSTOM_NAME_PATTERN}`, at most 255 '
                     'characters).'},
    )
    @versions('1.6')
    def update(self, request, name):
        self.authorize(self.POLICY % 'update')
        validate(name, schemas.CUSTOM_TRAIT_NAME,
                 'The trait is invalid. A valid trait must be no longer than 255 characters, '
                 'start with the prefix "CUSTOM_" and use following characters: "A"-"Z", '
                 '"0"-"9" and "_"')
        trait, created = services.trait_ensure(name=name)
        return self.no_content(status=201 if created else 204,
                               location=serializers.trait_url(request, trait.name),
                               last_modified=trait.created_at, cache_headers=True)

    @operation(
        'deleteTrait', tag='Traits', summary='Delete a custom trait',
        description='Delete a custom trait no provider has.',
        parameters=[CUSTOM_TRAIT_NAME],
        responses={204: (None, 'Deleted.')}, accept_json=False,
        errors={400: 'A standard trait cannot be deleted.', 404: 'No such trait.',
                409: 'A provider has the trait.'},
    )
    @versions('1.6')
    def destroy(self, request, name):
        self.authorize(self.POLICY % 'delete')
        trait = self._find(name)
        services.trait_delete(trait=trait)
        return self.no_content()
