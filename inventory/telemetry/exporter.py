"""Collector for a DCGM exporter's ``/metrics`` page, scraped by the portal itself (sites without Prometheus).

One scrape gives one ``SampleRecord`` per GPU, at the scrape time (``end``: the moment the pull started,
see ``pull.pull``) or at the samples' own timestamps when the page carries them. The pull stores the
samples and rolls them up into the hour, so pulls at the source's interval build the hourly rows. DCGM's
energy counter, where the exporter publishes it, is stored with the sample: the rollup measures an hour's
energy from its increase between scrapes (``rollups.counter_energy``).

The page is read with ``prometheus_client``'s parser. A value that is not a finite number (NaN, ±Inf) is
kept as None ("not reported") and counted in a warning. DCGM's blank values (``dcgm.blank``: a field the GPU
does not support, e.g. ``9223372036854775794`` as its memory temperature) are None too, counted per field and
reason on the data-quality panel; the parser reads an INT64 code as the float 2**63, so the code's own digits
are taken from the page's text (``exact_codes``) to tell "not supported" from "not permissioned".

If the parser rejects the page (e.g. one line whose value is not a number), the page is read again line by
line, so only the unreadable lines are left out, each counted in the warnings. A page with nothing readable
is a ``SourceError``.
"""

import re
from collections import Counter, defaultdict
from datetime import UTC, datetime

from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from . import dcgm
from .records import Collected, SampleRecord, SourceError


def collect(source, start, end):
    """Scrape ``source.url`` once. ``start`` is not used: an exporter only knows the present."""
    scraped_at = min(end, timezone.now())
    response = dcgm.http_get(source, source.url)
    collected = Collected(synced_until=scraped_at)
    collected.samples = sample_records(read_samples(response.text, source.url, collected.warnings), scraped_at,
                                       collected.warnings, collected.quality)
    return collected


def read_samples(text, url, warnings):
    """``(name, labels, value, unix timestamp or None, exact)`` for every sample on an exposition page; ``exact``
    is the integer the page wrote where it is one of DCGM's INT64 blank codes (else None)."""
    codes = exact_codes(text)
    return [(name, labels, value, timestamp, codes.get((name, tuple(sorted(labels.items())))))
            for name, labels, value, timestamp in parsed_samples(text, url, warnings)]


# A sample line whose value is one of DCGM's INT64 blank codes, 9223372036854775792…95 (``dcgm.INT64_BLANK``).
INT64_CODE = re.compile(r"^[^#\n].*[ \t](92233720368547757(?:9[2-5]))(?:[ \t]+-?\d+)?[ \t]*$", re.MULTILINE)


def exact_codes(text):
    """(series, sorted labels) → the INT64 code the page wrote for it: a float holds them all as 2**63."""
    codes = {}
    for match in INT64_CODE.finditer(text) if "92233720368547757" in text else ():
        try:
            families = list(text_string_to_metric_families(match.group(0) + "\n"))
        except ValueError:
            continue
        for family in families:
            for sample in family.samples:
                codes[(series_name(family, sample), tuple(sorted(sample.labels.items())))] = int(match.group(1))
    return codes


def parsed_samples(text, url, warnings):
    try:
        return [(series_name(family, s), s.labels, s.value, s.timestamp)
                for family in text_string_to_metric_families(text) for s in family.samples]
    except ValueError:
        pass
    samples, unreadable = [], []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            samples += [(series_name(family, s), s.labels, s.value, s.timestamp)
                        for family in text_string_to_metric_families(line + "\n") for s in family.samples]
        except ValueError:
            unreadable.append(line)
    if unreadable and not samples:
        raise SourceError(f"{dcgm.endpoint(url)}: not a metrics page (no line could be read)")
    if unreadable:
        warnings.append(f"{len(unreadable)} unreadable line(s) left out, e.g. {shorten(unreadable[0])!r}")
    return samples


def series_name(family, sample):
    """The name of a sample's series. The parser names a counter's samples ``<family>_total`` (the
    OpenMetrics way) also where the page, as dcgm-exporter's, writes the counter without the suffix; the
    series is then the family (``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``, written either way)."""
    return family.name if family.type == "counter" and sample.name == f"{family.name}_total" else sample.name


def shorten(line, keep=80):
    """The start and the end of a long line: the value, at the end, is usually what is wrong."""
    return line if len(line) <= 2 * keep else f"{line[:keep]} … {line[-keep:]}"


def sample_time(timestamp, scraped_at):
    """A sample's own timestamp (seconds) as a datetime, the scrape's time when it has none, None when it is
    out of any datetime's range (1e20)."""
    if not timestamp:
        return scraped_at
    try:
        return datetime.fromtimestamp(timestamp, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def sample_records(samples, scraped_at, warnings, quality=None):
    """Parsed samples → one ``SampleRecord`` per GPU and timestamp, in the portal's units; the series of a
    GPU's MIG instances are combined into it (``dcgm.combine_instances``) and counted in ``quality``."""
    parts = {}  # (series key, ts) → [series, whole-GPU fields, {instance: fields}]
    not_finite, nameless, unreadable_times = Counter(), 0, 0
    blanks = defaultdict(set)  # (series, why) → GPUs
    for name, labels, value, timestamp, exact in samples:
        stored = name in dcgm.READ_SERIES
        if not stored and not (name.startswith("DCGM_FI_") and dcgm.mig_instance(labels)):
            continue  # other series matter only to see a MIG instance (one may publish only a temperature)
        series = dcgm.series_key(labels)
        if series is None:
            nameless += stored
            continue
        ts = sample_time(timestamp, scraped_at)
        if ts is None:
            unreadable_times += 1
            continue
        part = parts.setdefault((series.key, ts), [series, {}, {}])
        instance = dcgm.mig_instance(labels)
        readings = part[1] if instance is None else part[2].setdefault(instance, {})
        if not stored:
            continue
        number, why = dcgm.reading(name, value, exact)
        converted = None if number is None else dcgm.convert(name, number)
        if why not in (None, dcgm.NOT_FINITE):
            blanks[(name, why)].add(series.key)
        elif converted is None:
            not_finite[name] += 1
        readings[name] = converted
    records = []
    for (key, ts), (series, whole, instances) in parts.items():
        record = SampleRecord(series=series, ts=ts, mig=tuple(sorted(instances)))
        fields = {instance: dcgm.sample_fields(readings) for instance, readings in instances.items()}
        for name, value in dcgm.combine_instances(dcgm.sample_fields(whole), fields, series.model_name).items():
            setattr(record, name, value)
        records.append(record)
        if instances and quality is not None:
            quality.add("mig_instances", f"{key}: " + ", ".join(f"{i} ({p})" for i, p in sorted(instances)),
                        count=len(instances))
    warnings += dcgm.bad_data_warnings(not_finite, nameless)
    if unreadable_times:
        warnings.append(f"{unreadable_times} sample(s) with a timestamp no clock can hold left out")
    if quality is not None:
        for name, count in sorted(not_finite.items()):
            quality.add("not_finite", f"{name}: {count}", count=count)
        for note, count in dcgm.blank_notes(blanks):
            quality.add("dcgm_blank", note, count=count)
    if not records and not nameless:
        warnings.append("no DCGM series on the page")
    return records
