"""`openstack resource pool ...`: shared resource pools in Placement.

A pool is a resource provider with the MISC_SHARES_VIA_AGGREGATE trait:
its inventory (disk of an NFS share, addresses of an IPv4 subnet) is
shared with the providers in the aggregates it belongs to.
"""
