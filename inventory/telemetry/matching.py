"""Match what sources name to the inventory: a series to a GPU (by UUID, else hostname + GPU index), a Slurm
host to a node. Host names are compared the same way everywhere (``host_key``): the inventory may hold
FQDNs while Slurm and DCGM report short names, in any case."""

from django.db.models.functions import Lower

from inventory.models import GPU, Node

from .rollups import among


def host_key(hostname):
    """The name a host is matched by: lower case, without its domain (``GPU-001.zrh.example`` → ``gpu-001``)."""
    return (hostname or "").strip().lower().split(".")[0]


class GPUMatcher:
    """Finds the GPUs of the series one pull brought (``series``: their keys): those with a UUID in one
    query of their UUIDs (a site's pull reads its site's GPUs, not the fleet's); by host name and GPU index, the
    inventory's slots in one more query, loaded only when a series is not found by its UUID."""

    def __init__(self, series):
        uuids = {s.uuid.lower() for s in series if s.uuid}
        found = GPU.objects.alias(key=Lower("uuid")).filter(among("key", uuids, "text")).order_by()
        self.by_uuid = {uuid.lower(): pk for pk, uuid in found.values_list("pk", "uuid")}
        self._by_slot = None

    @property
    def by_slot(self):
        if self._by_slot is None:
            self._by_slot = {}
            for pk, hostname, slot in GPU.objects.filter(node__isnull=False).values_list("pk", "node__hostname",
                                                                                          "slot"):
                self._by_slot[(hostname.strip().lower(), str(slot))] = pk
                self._by_slot.setdefault((host_key(hostname), str(slot)), pk)
        return self._by_slot

    def gpu_id(self, series):
        if series.uuid and series.uuid.lower() in self.by_uuid:
            return self.by_uuid[series.uuid.lower()]
        if series.hostname and series.gpu_index != "":
            hostname = series.hostname.strip().lower()
            for candidate in (hostname, host_key(hostname)):
                pk = self.by_slot.get((candidate, str(series.gpu_index)))
                if pk:
                    return pk
        return None


class NodeMatcher:
    """Host name → inventory node id (one query): the exact name first, else by ``host_key``."""

    def __init__(self):
        self.exact, self.by_key = {}, {}
        for pk, hostname in Node.objects.values_list("pk", "hostname"):
            self.exact[hostname.strip().lower()] = pk
            self.by_key.setdefault(host_key(hostname), pk)

    def node_id(self, hostname):
        name = (hostname or "").strip().lower()
        return self.exact.get(name) or self.by_key.get(host_key(name))
