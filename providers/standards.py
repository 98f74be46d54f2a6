"""The standard resource classes and traits, from the OpenStack libraries
that define them (os-resource-classes, os-traits).

Synchronising is idempotent: names the libraries gained are added, nothing is
ever removed or renumbered. Standard resource classes keep their position in
os_resource_classes.STANDARDS as id, as OpenStack Placement numbers them.
"""
import os_resource_classes
import os_traits


def sync_standard_names(resource_class_model, trait_model):
    """Add missing standard classes and traits; returns (classes, traits) added."""
    known_classes = set(resource_class_model.objects.values_list('name', flat=True))
    new_classes = [
        resource_class_model(id=index, name=name)
        for index, name in enumerate(os_resource_classes.STANDARDS)
        if name not in known_classes
    ]
    resource_class_model.objects.bulk_create(new_classes, ignore_conflicts=True)
    known_traits = set(trait_model.objects.values_list('name', flat=True))
    new_traits = [trait_model(name=name) for name in sorted(os_traits.get_traits())
                  if name not in known_traits]
    trait_model.objects.bulk_create(new_traits, ignore_conflicts=True)
    return len(new_classes), len(new_traits)
