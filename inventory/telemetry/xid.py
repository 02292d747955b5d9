"""XID errors: what DCGM's sticky gauge means, and how readings of it become events.

``DCGM_FI_DEV_XID_ERRORS`` is a gauge holding the *last* XID code the driver reported for a GPU; it keeps that
value until the driver or the exporter restarts (then it reads 0). Counting samples or hours with a non-zero
value therefore counts one event again and again, and reopens a ticket after support has resolved it. An
*event* is counted when the value changes to a non-zero code (``events``): 0 → 79 is one event, 79 → 79 is
none, 79 → 48 is a new one, 79 → 0 → 79 (a restart, then the fault again) is a second one.

Codes are classified from NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors): *hardware* faults
(ECC, NVLink, a GPU fallen off the bus, GSP and micro-controller errors) degrade the GPU and open a hardware
ticket; *application* errors (a kernel's memory page fault, an engine exception, a channel reset) are the
job's problem and do neither; codes the catalogue here does not know are shown as *unclassified* and open
nothing on their own.
"""

import re
from datetime import datetime
from typing import NamedTuple

HARDWARE, APPLICATION, UNCLASSIFIED = "hardware", "application", "unclassified"

# code → (kind, meaning), from NVIDIA's XID catalogue.
CATALOGUE = {
    8: (APPLICATION, "GPU stopped processing (channel idle timeout)"),
    13: (APPLICATION, "Graphics engine exception (e.g. an illegal address or instruction in a kernel)"),
    31: (APPLICATION, "GPU memory page fault (an application accessed memory it does not own)"),
    32: (HARDWARE, "Invalid or corrupted push buffer stream (PCIe bus error)"),
    38: (HARDWARE, "Driver firmware error"),
    43: (APPLICATION, "GPU stopped processing (a channel was reset after an application error)"),
    45: (APPLICATION, "Preemptive cleanup after previous errors (the application was stopped)"),
    46: (HARDWARE, "GPU stopped processing (driver)"),
    48: (HARDWARE, "Double-bit ECC error (uncorrectable)"),
    54: (HARDWARE, "Auxiliary power is not connected to the GPU"),
    56: (HARDWARE, "Display engine error"),
    61: (HARDWARE, "Internal micro-controller breakpoint/warning"),
    62: (HARDWARE, "Internal micro-controller halt"),
    63: (HARDWARE, "ECC page retirement or row remapping recorded"),
    64: (HARDWARE, "ECC page retirement or row remapper failure"),
    68: (APPLICATION, "Video decoder (NVDEC) exception"),
    69: (APPLICATION, "Graphics engine class error"),
    74: (HARDWARE, "NVLink error"),
    79: (HARDWARE, "GPU has fallen off the bus"),
    92: (HARDWARE, "High single-bit ECC error rate"),
    94: (HARDWARE, "Contained ECC error"),
    95: (HARDWARE, "Uncontained ECC error"),
    109: (APPLICATION, "Context switch timeout"),
    119: (HARDWARE, "GSP RPC timeout"),
    120: (HARDWARE, "GSP error"),
    121: (HARDWARE, "C2C link corrected error"),
    140: (HARDWARE, "Unrecovered ECC error"),
    143: (HARDWARE, "GPU initialization failure"),
    144: (HARDWARE, "NVLink: SAW MVB/NVLE error"),
    145: (HARDWARE, "NVLink: RLW error"),
    154: (HARDWARE, "GPU recovery action changed (reset or reboot needed)"),
}
ECC_CODES = (48, 63, 64, 92, 94, 95, 140)


def kind_of(code):
    return CATALOGUE.get(code, (UNCLASSIFIED, ""))[0]


def meaning(code):
    return CATALOGUE.get(code, (UNCLASSIFIED, "not in the portal's XID catalogue"))[1]


NAMED = re.compile(r"\bXID (\d+)\b")  # how a lifecycle reason names the fault: "XID 79: GPU 3 fell off the bus"


def named_code(text):
    """The XID code ``text`` names ("XID 79: ..." → 79), None if none."""
    found = NAMED.search(text or "")
    return int(found.group(1)) if found else None


def describe(code):
    """``XID 79 (hardware): GPU has fallen off the bus``."""
    return f"XID {code} ({kind_of(code)}): {meaning(code)}"


class Reading(NamedTuple):
    """The gauge of one GPU at ``ts``: ``code`` its value then. From hourly Prometheus figures, where the value
    changed inside the hour: ``passed``, the highest code it held (``max_over_time``), and ``dropped``, whether
    it read 0 in between (``min_over_time``: a driver or exporter restart). A tuple: a pull makes three for each
    GPU, 30,000 at 10,000 GPUs: twice as fast to make as a frozen dataclass."""

    ts: datetime
    code: int
    passed: int | None = None
    dropped: bool = False


def events(last_code, readings):
    """``(events, last code)``: the ``(ts, code)`` at which the gauge took a new non-zero value, from a GPU's
    ``readings`` in time order, given the code it held before them (0 when never read)."""
    found = []
    for reading in readings:
        if reading.passed and reading.passed not in (last_code, reading.code):
            found.append((reading.ts, reading.passed))
            last_code = reading.passed
        if reading.dropped:
            last_code = 0
        if reading.code != last_code and reading.code > 0:
            found.append((reading.ts, reading.code))
        last_code = reading.code
    return found, last_code
