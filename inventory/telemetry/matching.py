"""Match a source's series to inventory GPUs: by UUID, else by hostname + GPU index (slot)."""

from inventory.models import GPU


class GPUMatcher:
    """Loads the two lookup tables once (two queries) and answers for any number of series."""

    def __init__(self):
        self.by_uuid = {uuid.lower(): pk for pk, uuid in GPU.objects.exclude(uuid="").values_list("pk", "uuid")}
        self.by_slot = {
            (hostname.lower(), str(slot)): pk
            for pk, hostname, slot in GPU.objects.filter(node__isnull=False).values_list("pk", "node__hostname", "slot")
        }

    def gpu_id(self, series):
        if series.uuid and series.uuid.lower() in self.by_uuid:
            return self.by_uuid[series.uuid.lower()]
        if series.hostname and series.gpu_index != "":
            hostname = series.hostname.lower()
            for candidate in (hostname, hostname.split(".")[0]):  # exporters often report the FQDN
                pk = self.by_slot.get((candidate, str(series.gpu_index)))
                if pk:
                    return pk
        return None
