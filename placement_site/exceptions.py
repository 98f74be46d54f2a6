"""Domain errors raised by the services and selectors of both apps.

Messages read like OpenStack Placement's, because the API embeds them in
error details that clients and operators match on. The API views map each
to a status code; the admin shows the message.
"""


class PlacementDomainError(Exception):
    message = 'An unknown error occurred.'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        super().__init__(message or self.message % kwargs)


class NotFound(PlacementDomainError):
    message = 'Resource could not be found.'


class ResourceProviderNotFound(NotFound):
    message = 'No resource provider with uuid %(uuid)s found'


class ProviderForAllocationNotFound(NotFound):
    message = "Allocation for resource provider '%(uuid)s' that does not exist."


class ResourceClassNotFound(NotFound):
    message = 'No such resource class %(name)s.'


class TraitNotFound(NotFound):
    message = 'No such trait(s): %(names)s.'


class InventoryNotFound(NotFound):
    message = 'No inventory of class %(resource_class)s found.'


class ConcurrentUpdate(PlacementDomainError):
    message = 'Another thread concurrently updated the data. Please retry your update'


class ProviderConcurrentUpdate(ConcurrentUpdate):
    message = ('Another thread concurrently updated the resource provider data. '
               'Please retry your update')


class ConsumerGenerationConflict(ConcurrentUpdate):
    message = 'consumer generation conflict - expected %(expected)s but got %(got)s'


class ObjectActionError(PlacementDomainError):
    message = 'Object action %(action)s failed because: %(reason)s'


class DuplicateProvider(PlacementDomainError):
    message = 'Conflicting resource provider %(duplicate)s already exists.'


class InvalidInventory(PlacementDomainError):
    message = "Inventory for '%(resource_class)s' on resource provider '%(resource_provider)s' invalid."


class InvalidInventoryCapacity(InvalidInventory):
    message = ("Invalid inventory for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The reserved value is greater than or equal to total.")


class InvalidInventoryCapacityReservedCanBeTotal(InvalidInventoryCapacity):
    message = ("Invalid inventory for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The reserved value is greater than total.")


class InventoryInUse(InvalidInventory):
    message = "Inventory for '%(resource_classes)s' on resource provider '%(resource_provider)s' in use."


class InventoryBelowUsage(InventoryInUse):
    message = ("Inventory for '%(resource_class)s' on resource provider '%(resource_provider)s' "
               "would leave its allocations over capacity: %(used)s used, capacity %(capacity)s.")


class InvalidAllocationCapacityExceeded(InvalidInventory):
    message = ("Unable to create allocation for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The requested amount would exceed the capacity.")


class InvalidAllocationConstraintsViolated(InvalidInventory):
    message = ("Unable to create allocation for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The requested amount would violate inventory constraints.")


class CannotDeleteParentProvider(PlacementDomainError):
    message = ('Cannot delete resource provider that is a parent of another. '
               'Delete child providers first.')


class ProviderInUse(PlacementDomainError):
    message = 'Resource provider has allocations.'


class ResourceClassExists(PlacementDomainError):
    message = 'Resource class %(name)s already exists.'


class ResourceClassInUse(PlacementDomainError):
    message = 'Cannot delete resource class %(name)s. Class is in use in inventory.'


class ResourceClassCannotDeleteStandard(PlacementDomainError):
    message = 'Cannot delete standard resource class %(name)s.'


class ResourceClassCannotUpdateStandard(PlacementDomainError):
    message = 'Cannot update standard resource class %(name)s.'


class TraitInUse(PlacementDomainError):
    message = 'The trait %(name)s is in use by a resource provider.'


class TraitCannotDeleteStandard(PlacementDomainError):
    message = 'Cannot delete standard trait %(name)s.'


# ---- pods and pod bindings (not part of OpenStack Placement) ----------------------

class PodNotFound(NotFound):
    message = 'No pod with uuid %(uuid)s found'


class PodBindingNotFound(NotFound):
    message = 'No pod binding with uuid %(uuid)s found'


class DuplicatePod(PlacementDomainError):
    message = 'Conflicting pod %(duplicate)s already exists.'


class AggregateIsAnotherPod(PlacementDomainError):
    message = 'Aggregate %(aggregate)s is already the pod %(pod)s.'


class PodInUse(PlacementDomainError):
    message = ('Pod %(name)s has bindings, whose history is kept: put it into maintenance '
               'instead.')


class NoPodAvailable(PlacementDomainError):
    message = 'No pod can take the %(affinity)s work of project %(project_id)s: %(reasons)s.'


class PodDoesNotServeAffinity(PlacementDomainError):
    message = 'Pod %(name)s does not serve %(affinity)s work.'


class PodBindingEnded(PlacementDomainError):
    message = 'Pod binding %(uuid)s already ended at %(ended_at)s (%(reason)s).'
