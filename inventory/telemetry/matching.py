"""Match what sources name to the inventory: a series to a GPU (by UUID, else hostname + GPU index), a Slurm
host to a node. Host names are compared the same way everywhere (``host_key``): the inventory may hold
FQDNs while Slurm and DCGM report short names, in any case."""

from inventory.models import GPU, Node


def host_key(hostname):
    """The name a host is matched by: lower case, without its domain (``GPU-001.zrh.example`` → ``gpu-001``)."""
    return (hostname or "").strip().lower().split(".")[0]


class GPUMatcher:
    """Loads the two lookup tables once (two queries) and answers for any number of series."""

    def __init__(self):
        self.by_uuid = {uuid.lower(): pk for pk, uuid in GPU.objects.exclude(uuid="").values_list("pk", "uuid")}
        self.by_slot = {}
        for pk, hostname, slot in GPU.objects.filter(node__isnull=False).values_list("pk", "node__hostname", "slot"):
            self.by_slot[(hostname.strip().lower(), str(slot))] = pk
            self.by_slot.setdefault((host_key(hostname), str(slot)), pk)

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
