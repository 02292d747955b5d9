"""Static files the portal serves itself (air-gapped networks: nothing from a CDN): plotly.js is a bundle of only
the trace types charts.js draws (tools/plotly/build.sh), small enough for every chart page."""

import re

from django.contrib.staticfiles import finders

from tests.helpers.paths import ROOT

BUNDLE_LIMIT_BYTES = 1_500_000  # the full plotly.min.js is 4.8 MB


def registered_traces(bundle):
    return set(re.findall(r'moduleType:"trace",name:"(\w+)"', bundle))


def test_plotly_is_our_bundle_of_the_traces_the_charts_draw_and_no_more():
    found = finders.find("plotly/plotly.min.js")
    assert found == str(ROOT / "portal" / "static" / "plotly" / "plotly.min.js")
    bundle = (ROOT / "portal" / "static" / "plotly" / "plotly.min.js").read_text()
    assert len(bundle.encode()) <= BUNDLE_LIMIT_BYTES
    charts = (ROOT / "portal" / "static" / "portal" / "js" / "charts.js").read_text()
    drawn = set(re.findall(r'type: "(scatter|bar|heatmap|pie|box|histogram\w*|contour|violin|image)"', charts))
    assert drawn and registered_traces(bundle) == drawn | {"scatter"}  # scatter: plotly's core, always there


def test_the_bundle_says_what_it_is_and_its_license_comes_with_it():
    bundle = (ROOT / "portal" / "static" / "plotly" / "plotly.min.js").read_text()
    assert bundle.startswith("/* plotly.js 4.1.1 (core, bar, heatmap)")
    assert "MIT License" in (ROOT / "portal" / "static" / "plotly" / "LICENSE.txt").read_text()
