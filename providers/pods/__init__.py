"""Pod binding: pods (pools of providers that serve a tenant's VMs and
volumes together), the tenants bound to them, and the selection that binds
and rebinds them.

models.py (Pod, PodBinding), selection.py (the pipeline of filters and
weighers over pods' live books), services.py (writes, one transaction
each), schemas.py, views.py (/pods and /pod_bindings, each operation with
its OpenAPI description), admin.py. The pods dashboard lives with the
others in allocations/ui.
"""
