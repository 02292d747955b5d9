"""What allocations add to the home page: a tile with the allocations whose use crossed a warning level."""

from django.urls import reverse

from portal.registry import Tile

from .alerts import over_levels


def allocation_tiles(request):
    """"Allocations at 80 % or more": how many, the worst named; for those who read some team's allocations."""
    user = request.user
    if not user.has_perm("inventory.read_allocation"):
        return None
    found = over_levels(user)
    url = reverse("inventory:teamallocation_list")
    if not found:
        return [Tile("allocations", "allocations near their budget", "0", url, note="none at 80 % or more")]
    allocation, figures = found[0]
    spent = sum(1 for _, row in found if row.level >= 100)
    note = f"worst: {allocation.team} at {figures.percent:g} %"
    if spent:
        note += f"; {spent} used up"
    return [Tile("allocations", "allocations near their budget", str(len(found)), allocation.get_absolute_url()
                 if len(found) == 1 else url, note=note, warn=True)]
