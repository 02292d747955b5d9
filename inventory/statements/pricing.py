"""Which rate card prices a month, and which of its rates prices a GPU-hour (plain Python over the card's rates).

The card in effect on the month's first day prices the whole month. On a card, the most specific rate wins: GPU model
and partition, then GPU model (any partition), then partition (any model), then the card's default (neither).
A GPU-hour that no rate matches is an error (``NoRate``), never priced at zero.
"""

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from .models import RateCard

CENT = Decimal("0.01")
HOURS = Decimal("0.0001")


class NoRate(LookupError):
    """No card in effect, or no rate on it for a GPU model and partition."""


def card_for(month):
    """The rate card in effect on ``month`` (its first day): the latest that begins on or before it."""
    card = RateCard.objects.filter(effective_from__lte=month).order_by("-effective_from").first()
    if card is None:
        raise NoRate(f"No rate card is in effect on {month.isoformat()}: add one that begins by then.")
    return card


@dataclass(frozen=True)
class Prices:
    """A card's rates, keyed by (GPU model id or None, partition or "")."""

    card: RateCard
    rates: dict

    @classmethod
    def of(cls, card):
        return cls(card, {(rate.gpu_model_id, rate.partition): rate.price_per_gpu_hour for rate in card.rates.all()})

    def price(self, gpu_model_id, partition):
        """The price per GPU-hour of the most specific rate for this model and partition (module docstring)."""
        for key in ((gpu_model_id, partition), (gpu_model_id, ""), (None, partition), (None, "")):
            if key in self.rates:
                return self.rates[key]
        raise NoRate(f"{self.card} has no rate for GPU model {gpu_model_id or 'none'} in partition "
                     f"{partition or 'none'}: add a default rate (any model, any partition).")


def hours(value):
    """GPU-hours as stored: a Decimal to 1/10,000 of an hour."""
    return Decimal(str(value)).quantize(HOURS, rounding=ROUND_HALF_UP)


def money(value):
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


def amount(gpu_hours, price):
    """``gpu_hours`` (as stored) × ``price``, to the cent."""
    return money(hours(gpu_hours) * price)
