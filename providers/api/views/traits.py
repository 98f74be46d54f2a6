"""/traits[/{name}]: the standard and custom traits."""
from placement_site import errors, exceptions
from placement_site.api import PlacementViewSet, accept_json, query_params, validate, versions
from placement_site.queries import storable
from providers import schemas, services
from providers.api import serializers
from providers.models import Trait


class TraitViewSet(PlacementViewSet):
    """/traits[/{name}]"""
    POLICY = 'placement:traits:%s'

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

    @versions('1.6')
    def retrieve(self, request, name):
        self.authorize(self.POLICY % 'show')
        trait = self._find(name)
        return self.no_content(last_modified=trait.created_at, cache_headers=True)

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

    @versions('1.6')
    def destroy(self, request, name):
        self.authorize(self.POLICY % 'delete')
        trait = self._find(name)
        services.trait_delete(trait=trait)   # standard: 400, in use: 409
        return self.no_content()
