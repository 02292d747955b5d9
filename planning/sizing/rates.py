"""The fleet's measured interruption rate, for sizing's default goodput, and when it is trusted over the published one.

``MeasuredRate(gpu_model, interruptions, gpu_hours)``: the infrastructure interruptions of a GPU model's jobs over
their allocated GPU-hours (built by ``planning.goodput.measured_rates`` from ``inventory.goodput``).

The interval. k interruptions over an exposure of T GPU-days is a Poisson count; its exact 95 % confidence interval
(Garwood 1936) is [χ²(0.025; 2k) / 2, χ²(0.975; 2k + 2) / 2] / T, the lower bound 0 when k = 0. Half a χ² quantile
with 2k degrees of freedom is the inverse regularised lower incomplete gamma function of k, which scipy (installed
with statsmodels) computes: [P⁻¹(k, 0.025), P⁻¹(k + 1, 0.975)] / T.

When to trust it: from ``MIN_INTERRUPTIONS`` = 10. How wide the interval is relative to the estimate depends on k
alone: its upper / lower bound is 14 at 3 interruptions, 7.2 at 5, 3.8 at 10, 2.5 at 20. The published rates that
the measured one replaces span about 6× (Llama 3, Dubey et al. 2024: 0.0005 per GPU-day; Meta's research clusters,
Kokolis et al. 2024: a few per 1,000 GPU-days), so a fleet's own rate says more than the literature only once its
interval is clearly narrower than that spread. From 10 interruptions it is: the rate is known within about a factor
of 2 either way (0.48× to 1.84× the estimate, upper / lower under 4). With fewer, sizing keeps the published rate and
says why; a long history without interruptions is not evidence enough either (0 of them: the upper bound is 3.7
interruptions over the exposure, the rate could still be the published one).
"""

import math
from dataclasses import dataclass

CONFIDENCE = 0.95
MIN_INTERRUPTIONS = 10  # see the module docstring: the 95 % interval's upper / lower under 4


def poisson_interval(events, confidence=CONFIDENCE):
    """(low, high): the exact (Garwood) confidence interval of a Poisson mean, ``events`` observed."""
    from scipy.special import gammaincinv  # imported when used: scipy.special costs 0.3 s to import

    tail = (1 - confidence) / 2
    low = 0.0 if events == 0 else float(gammaincinv(events, tail))
    return low, float(gammaincinv(events + 1, 1 - tail))


def per_day(rate):
    """A rate per GPU-day to two significant digits, never in scientific notation: ``0.0011``, ``0.37``."""
    if not rate:
        return "0"
    return f"{rate:.{max(2, 1 - math.floor(math.log10(abs(rate))))}f}"


def amount(value):
    """GPU-days: whole ones with separators from 100, else three significant digits."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


@dataclass(frozen=True)
class MeasuredRate:
    """The fleet's infrastructure interruptions of ``gpu_model``'s jobs over ``gpu_hours`` allocated GPU-hours."""

    gpu_model: str
    interruptions: int
    gpu_hours: float

    @property
    def per_gpu_hour(self):
        return self.interruptions / self.gpu_hours

    @property
    def gpu_days(self):
        return self.gpu_hours / 24

    @property
    def per_gpu_day(self):
        return self.interruptions / self.gpu_days

    @property
    def interval_per_gpu_day(self):
        """(low, high): the 95 % interval of the rate per GPU-day."""
        low, high = poisson_interval(self.interruptions)
        return low / self.gpu_days, high / self.gpu_days

    @property
    def trusted(self):
        """Enough interruptions for sizing to use this rate instead of the published one (module docstring)."""
        return self.interruptions >= MIN_INTERRUPTIONS

    @property
    def interval_text(self):
        """``95 % CI 0.0006–0.0019, 14 interruptions over 12,700 GPU-days``."""
        low, high = self.interval_per_gpu_day
        return (f"95 % CI {per_day(low)}–{per_day(high)}, {self.interruptions:,} interruption"
                f"{'' if self.interruptions == 1 else 's'} over {amount(self.gpu_days)} GPU-days")

    @property
    def text(self):
        """``0.0011 per GPU-day (95 % CI 0.0006–0.0019, 14 interruptions over 12,700 GPU-days)``."""
        return f"{per_day(self.per_gpu_day)} per GPU-day ({self.interval_text})"

    @property
    def why_not_trusted(self):
        """Why sizing does not use it, in words; empty when it does."""
        if self.trusted:
            return ""
        many = "No interruption" if not self.interruptions else f"Only {self.interruptions:,} interruption" + (
            "" if self.interruptions == 1 else "s")
        return (f"{many} measured on your fleet's {self.gpu_model} ({per_day(self.per_gpu_day)} per GPU-day, "
                f"{self.interval_text}): too few to trust (at least "
                f"{MIN_INTERRUPTIONS} needed); using the published rate")

    @property
    def source(self):
        return f"measured on your fleet: {self.interruptions:,} interruptions over {self.gpu_hours:,.0f} GPU-hours"


def rate_basis(measured, published_per_gpu_hour, published_source, goodput_given=False):
    """The interruption rate behind a sizing's default goodput, for the page and the API: which rate was used
    (``measured`` or ``published``), its value per GPU-day, the fleet's measurement with its interval (None when
    there is none) and a sentence saying which and why."""
    use = measured if measured and measured.trusted else None
    fleet = None
    if measured:
        low, high = measured.interval_per_gpu_day
        fleet = {"gpu_model": measured.gpu_model, "interruptions": measured.interruptions,
                 "gpu_days": round(measured.gpu_days, 2), "per_gpu_day": measured.per_gpu_day,
                 "ci95_per_gpu_day": [low, high], "trusted": measured.trusted}
    if use:
        note = f"Interruption rate: {use.text}, measured on your fleet's {use.gpu_model}."
    else:
        note = f"Interruption rate: {per_day(published_per_gpu_hour * 24)} per GPU-day, published ({published_source})"
        note += f". {measured.why_not_trusted}." if measured else "."
    if goodput_given:
        note += " Not used here: the goodput was given."
    return {"used": "measured" if use else "published",
            "per_gpu_day": use.per_gpu_day if use else published_per_gpu_hour * 24,
            "measured": fleet, "min_interruptions": MIN_INTERRUPTIONS, "goodput_given": goodput_given, "note": note}
