"""Contracts over REST, with the contract list page's filters."""

from portal.api.viewsets import PortalModelViewSet

from .. import filters
from ..models import Contract
from .serializers import ContractSerializer


class ContractViewSet(PortalModelViewSet):
    """Purchase, rental/lease, expansion and support contracts: dates, notice, costs, covered assets (lists of
    ids) and, for support contracts, SLA terms per priority (the list is replaced when given on update)."""

    queryset = Contract.objects.select_related("owner", "rented_gpu_model").prefetch_related(
        "sla_terms", "sites", "racks", "nodes", "gpus", "switches", "storage_systems"
    )
    serializer_class = ContractSerializer
    filterset_class = filters.ContractFilterSet  # the same filters as the contract list page
