"""Domain errors raised by the services and selectors of both apps.

Messages read like OpenStack Placement's, because the API embeds them in
error details that clients and operators match on. Each is a PlacementError
carrying the status and error code Placement answers it with, so the API
answers any a view lets through as it is; a handler words one differently
only where Placement does (errors.worded). The admin shows the message.
"""
from placement_site import errors


class PlacementDomainError(errors.PlacementError):
    message = 'An unknown error occurred.'
    status = 400

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        super().__init__(detail=message or self.message % kwargs)


class NotFound(PlacementDomainError):
    message = 'Resource could not be found.'
    status = 404


class ResourceProviderNotFound(NotFound):
    message = 'No resource provider with uuid %(uuid)s found'


class ProviderForAllocationNotFound(NotFound):
    message = "Allocation for resource provider '%(uuid)s' that does not exist."
    status = 400


class ResourceClassNotFound(NotFound):
    message = 'No such resource class %(name)s.'


def unknown_class_in(field):
    """For errors.worded: a class named in the request's `field` that does
    not exist is the request's fault, a 400, worded as Placement does."""
    return {ResourceClassNotFound: errors.Worded(f'Invalid resource class in {field}: {{error}}',
                                                 status=400)}


class TraitNotFound(NotFound):
    message = 'No such trait(s): %(names)s.'


class InventoryNotFound(NotFound):
    message = 'No inventory of class %(resource_class)s found.'


class ConcurrentUpdate(PlacementDomainError):
    message = 'Another thread concurrently updated the data. Please retry your update'
    status = 409
    code = errors.CONCURRENT_UPDATE
    stale = True


class ProviderConcurrentUpdate(ConcurrentUpdate):
    message = ('Another thread concurrently updated the resource provider data. '
               'Please retry your update')


class ConsumerGenerationConflict(ConcurrentUpdate):
    message = 'consumer generation conflict - expected %(expected)s but got %(got)s'


class ObjectActionError(PlacementDomainError):
    message = 'Object action %(action)s failed because: %(reason)s'


class DuplicateProvider(PlacementDomainError):
    message = 'Conflicting resource provider %(duplicate)s already exists.'
    status = 409
    code = errors.DUPLICATE_NAME


class InvalidInventory(PlacementDomainError):
    message = ("Inventory for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s' invalid.")


class InvalidInventoryCapacity(InvalidInventory):
    message = ("Invalid inventory for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The reserved value is greater than or equal to total.")


class InvalidInventoryCapacityReservedCanBeTotal(InvalidInventoryCapacity):
    message = ("Invalid inventory for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The reserved value is greater than total.")


class InventoryInUse(InvalidInventory):
    message = ("Inventory for '%(resource_classes)s' on resource provider "
               "'%(resource_provider)s' in use.")
    status = 409
    code = errors.INVENTORY_INUSE


class InventoryBelowUsage(InventoryInUse):
    message = ("Inventory for '%(resource_class)s' on resource provider '%(resource_provider)s' "
               "would leave its allocations over capacity: %(used)s used, capacity %(capacity)s.")


class InvalidAllocationCapacityExceeded(InvalidInventory):
    message = ("Unable to create allocation for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The requested amount would exceed the capacity.")
    status = 409


class InvalidAllocationConstraintsViolated(InvalidInventory):
    message = ("Unable to create allocation for '%(resource_class)s' on resource provider "
               "'%(resource_provider)s'. The requested amount would violate inventory constraints.")
    status = 409


class CannotDeleteParentProvider(PlacementDomainError):
    message = ('Cannot delete resource provider that is a parent of another. '
               'Delete child providers first.')
    status = 409
    code = errors.PROVIDER_CANNOT_DELETE_PARENT


class ProviderInUse(PlacementDomainError):
    message = 'Resource provider has allocations.'
    status = 409
    code = errors.PROVIDER_IN_USE


class ResourceClassExists(PlacementDomainError):
    message = 'Resource class %(name)s already exists.'
    status = 409


class ResourceClassInUse(PlacementDomainError):
    message = 'Cannot delete resource class %(name)s. Class is in use in inventory.'
    status = 409


class ResourceClassCannotDeleteStandard(PlacementDomainError):
    message = 'Cannot delete standard resource class %(name)s.'


class ResourceClassCannotUpdateStandard(PlacementDomainError):
    message = 'Cannot update standard resource class %(name)s.'


class TraitInUse(PlacementDomainError):
    message = 'The trait %(name)s is in use by a resource provider.'
    status = 409


class TraitCannotDeleteStandard(PlacementDomainError):
    message = 'Cannot delete standard trait %(name)s.'


# ---- pods and pod bindings (not part of OpenStack Placement) ----------------------

class PodNotFound(NotFound):
    message = 'No pod with uuid %(uuid)s found'


class PodBindingNotFound(NotFound):
    message = 'No pod binding with uuid %(uuid)s found'


class DuplicatePod(PlacementDomainError):
    message = 'Conflicting pod %(duplicate)s already exists.'
    status = 409
    code = errors.DUPLICATE_NAME


class AggregateIsAnotherPod(PlacementDomainError):
    message = 'Aggregate %(aggregate)s is already the pod %(pod)s.'
    status = 409


class PodInUse(PlacementDomainError):
    message = ('Pod %(name)s has bindings, whose history is kept: put it into maintenance '
               'instead.')
    status = 409
    code = errors.POD_IN_USE


class NoPodAvailable(PlacementDomainError):
    message = 'No pod can take the %(affinity)s work of project %(project_id)s: %(reasons)s.'
    status = 409
    code = errors.NO_POD_AVAILABLE


class PodDoesNotServeAffinity(PlacementDomainError):
    message = 'Pod %(name)s does not serve %(affinity)s work.'


class PodBindingEnded(PlacementDomainError):
    message = 'Pod binding %(uuid)s already ended at %(ended_at)s (%(reason)s).'
    status = 409
