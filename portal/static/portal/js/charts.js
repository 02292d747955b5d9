// Draws every <div class="chart" data-chart="..." data-source="ID"> from the JSON in <script id="ID">.
// Data comes through json_script, so pages need no inline script (Content-Security-Policy friendly).
(function () {
  "use strict";
  var STATE_COLOURS = {
    ordered: "#9aa5b1", delivered: "#7cb7e8", burn_in: "#f0b429", in_service: "#3ebd93",
    degraded: "#f29b4b", in_repair: "#d64545", retired: "#616e7c"
  };
  var LAYOUT = {
    margin: { t: 10, r: 10, b: 60, l: 60 }, height: 280, paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)", font: { family: "system-ui, sans-serif", size: 12 }
  };
  var CONFIG = { displaylogo: false, responsive: true };

  function data(el) {
    var source = document.getElementById(el.dataset.source);
    var parsed = JSON.parse(source.textContent);
    return typeof parsed === "string" ? JSON.parse(parsed) : parsed;
  }

  function layout(el, extra) {
    return Object.assign({}, LAYOUT, { yaxis: { title: { text: el.dataset.yTitle || "" } } }, extra || {});
  }

  function axis(title, extra) {
    return Object.assign({ title: { text: title || "" }, automargin: true }, extra || {});
  }

  function hasValues(values) {
    return values.some(function (v) { return v !== null && v !== undefined; });
  }

  function empty(el, text) {
    el.textContent = text || "No data in this range.";
    el.classList.add("chart-empty");
  }

  // Utilization of the time series: null is a gap (no data), never drawn as zero.
  function timeseries(el, d) {
    var traces = d.series.filter(function (s) { return hasValues(s.y); }).map(function (s) {
      var trace = { type: "scatter", mode: "lines+markers", name: s.name, x: d.x, y: s.y, connectgaps: false,
        marker: { size: 3 }, line: { width: 2 } };
      if (s.style) { Object.assign(trace, s.style); }  // plotly trace settings from the server (fill, dash, colour)
      if (s.axis === "y2") {
        Object.assign(trace, { yaxis: "y2", line: { width: 1, dash: "dot", color: "#9aa5b1" },
          marker: { size: 2, color: "#9aa5b1" } });
      }
      return trace;
    });
    if (!traces.length) { empty(el); return; }
    var extra = {
      xaxis: axis(d.x_title, { type: "date", range: [d.x[0], d.x[d.x.length - 1]] }),
      // counts (errors, events): from 0, whole numbers only
      yaxis: axis(d.y_title, d.y_range ? { range: d.y_range }
        : d.counts ? { rangemode: "nonnegative", tickformat: ",d" } : {}),
      legend: { orientation: "h", y: -0.3 },
      margin: { t: 10, r: d.y2_title ? 60 : 10, b: 70, l: 60 }
    };
    if (el.dataset.height) {  // small multiples: one small chart per GPU or per metric, no legend
      Object.assign(extra, { height: +el.dataset.height, showlegend: d.legend !== false,
        margin: { t: 6, r: 8, b: 30, l: 44 } });
    }
    if (d.y2_title) {
      extra.yaxis2 = axis(d.y2_title, { overlaying: "y", side: "right", rangemode: "tozero", showgrid: false,
        tickformat: ",.0f" });
      // A count: below 10, a tick per whole number (plotly's own steps of 0.5 would print "2" twice).
      var y2max = Math.max.apply(null, d.series.filter(function (s) { return s.axis === "y2"; })
        .reduce(function (all, s) { return all.concat(s.y.filter(function (v) { return v !== null; })); }, [0]));
      if (y2max < 10) { extra.yaxis2.dtick = 1; }
    }
    if (d.stale_from) {
      // Shade what a stale source has not delivered: missing, not idle.
      var last = d.x[d.x.length - 1];
      extra.shapes = [{ type: "rect", xref: "x", yref: "paper", x0: d.stale_from, x1: last, y0: 0, y1: 1,
        fillcolor: "rgba(192,86,33,0.12)", line: { width: 1, color: "rgba(192,86,33,0.5)" } }];
      extra.annotations = [{ x: last, y: 1, xref: "x", yref: "paper", text: "stale source", showarrow: false,
        xanchor: "right", yanchor: "bottom", font: { color: "#c05621", size: 11 } }];
    }
    if (d.events && d.events.length) {
      // Faults (XID, ECC, row remap) as marked lines with their code; the meaning on hover and listed under the chart.
      var colour = function (e) { return e.kind === "remap" ? "#8a5a00" : "#c53030"; };
      extra.shapes = (extra.shapes || []).concat(d.events.map(function (e) {
        return { type: "line", xref: "x", yref: "paper", x0: e.x, x1: e.x, y0: 0, y1: 1,
          line: { width: 1.5, dash: "dot", color: colour(e) } };
      }));
      extra.annotations = (extra.annotations || []).concat(d.events.map(function (e) {
        return { x: e.x, y: 1, xref: "x", yref: "paper", text: e.label, hovertext: e.label + ": " + e.meaning +
          " (" + e.at + ")", showarrow: false, xanchor: "left", yanchor: "top", bgcolor: "rgba(255,255,255,0.85)",
          font: { size: 10, color: colour(e) } };
      }));
    }
    Plotly.newPlot(el, traces, layout(el, extra), CONFIG);
  }

  // Rows (nodes or GPUs) x time buckets; null cells stay blank.
  function heatmap(el, d) {
    if (!d.y.length) { empty(el); return; }
    var height = Math.max(220, 90 + d.y.length * 16);
    Plotly.newPlot(el, [{
      type: "heatmap", x: d.x, y: d.y, z: d.z, zmin: 0, zmax: 100, colorscale: "Viridis", hoverongaps: false,
      colorbar: { title: { text: d.z_title || "" }, thickness: 12 },
      hovertemplate: "%{y}<br>%{x}<br>%{z:.1f} %<extra></extra>"
    }], layout(el, {
      height: height, xaxis: axis(d.x_title, { type: "date" }),
      yaxis: axis("", { autorange: "reversed", type: "category", tickfont: { size: 10 } }),
      margin: { t: 10, r: 10, b: 60, l: 60 }
    }), CONFIG);
  }

  // Horizontal bars: one per label, one colour per series (p50 / p95).
  var BAR_COLOURS = ["#2f6fdb", "#f0b429", "#3ebd93"];
  function hbar(el, d) {
    var traces = d.series.filter(function (s) { return hasValues(s.values); }).map(function (s, i) {
      return { type: "bar", orientation: "h", name: s.name, y: d.labels, x: s.values,
        marker: { color: s.colour || BAR_COLOURS[i % BAR_COLOURS.length] },  // a colour per cause where given
        hovertemplate: "%{y}: %{x:.1f}<extra>" + s.name + "</extra>" };
    });
    if (!traces.length) { empty(el); return; }
    var barmode = d.barmode || "group";  // "stack": the series are parts of one bar (lost = run + wait)
    var rows = d.labels.length * (barmode === "stack" ? 1 : Math.max(1, traces.length));
    var legend = traces.length > 1;  // above the bars: below, a short chart's legend would cover the axis title
    Plotly.newPlot(el, traces, layout(el, {
      height: Math.max(140, 70 + rows * 22) + (legend ? 24 : 0), barmode: barmode, showlegend: legend,
      legend: { orientation: "h", x: 0, y: 1, yanchor: "bottom" },
      xaxis: axis(d.x_title, d.x_range ? { range: d.x_range } : { rangemode: "tozero" }),
      yaxis: axis("", { autorange: "reversed", type: "category" }),
      margin: { t: legend ? 34 : 10, r: 10, b: 50, l: 10 }
    }), CONFIG);
  }

  // Contracts as bars from start to end, one colour per kind, and a line at today; a bar links to its contract.
  var KIND_COLOURS = { purchase: "#2f6fdb", rental: "#f0b429", expansion: "#3ebd93", support: "#9f7aea" };
  function timeline(el, d) {
    if (!d.bars.length) { empty(el, "No contracts match."); return; }
    var DAY = 24 * 3600 * 1000;
    var traces = Object.keys(d.kinds).map(function (kind) {
      var bars = d.bars.filter(function (b) { return b.kind === kind; });
      return { type: "bar", orientation: "h", name: d.kinds[kind], marker: { color: KIND_COLOURS[kind] || "#9aa5b1" },
        y: bars.map(function (b) { return b.label; }),
        base: bars.map(function (b) { return b.start; }),
        x: bars.map(function (b) { return new Date(b.end) - new Date(b.start) + DAY; }),
        customdata: bars.map(function (b) { return [b.start, b.open_ended ? "open-ended" : b.end, b.url]; }),
        hovertemplate: "%{y}<br>%{customdata[0]} → %{customdata[1]}<extra>" + d.kinds[kind] + "</extra>" };
    }).filter(function (t) { return t.y.length; });
    Plotly.newPlot(el, traces, layout(el, {
      height: Math.max(160, 80 + d.bars.length * 24), barmode: "overlay", legend: { orientation: "h", y: -0.2 },
      xaxis: axis("", { type: "date" }),
      yaxis: axis("", { autorange: "reversed", type: "category" }),
      shapes: [{ type: "line", xref: "x", yref: "paper", x0: d.today, x1: d.today, y0: 0, y1: 1,
        line: { color: "#d64545", width: 2, dash: "dot" } }],
      annotations: [{ x: d.today, y: 1, xref: "x", yref: "paper", text: "today", showarrow: false,
        yanchor: "bottom", font: { color: "#d64545", size: 11 } }],
      margin: { t: 20, r: 10, b: 40, l: 10 }
    }), CONFIG);
    el.on("plotly_click", function (event) {
      var url = event.points[0].customdata[2];
      if (url) { window.location.href = url; }
    });
  }

  var renderers = {
    bar: function (el, d) {
      // Bars that are all zero draw an empty axis from -1 to 1: say what is missing instead (data-empty).
      if (!d.x.length || !hasValues(d.y.map(function (v) { return v || null; }))) {
        empty(el, el.dataset.empty || "No data yet.");
        return;
      }
      var extra = el.dataset.xTitle ? { xaxis: axis(el.dataset.xTitle) } : {};
      if (el.dataset.yInteger) {  // counts: whole-number ticks, never 0.5 of a ticket
        var top = Math.max.apply(null, d.y);
        extra.yaxis = axis(el.dataset.yTitle, { dtick: Math.max(1, Math.ceil(top / 5)), tickformat: "d" });
      }
      Plotly.newPlot(el, [{ type: "bar", x: d.x, y: d.y, marker: { color: "#2f6fdb" } }], layout(el, extra), CONFIG);
    },
    "stacked-bar": function (el, d) {
      var traces = d.series.filter(function (s) { return s.counts.some(function (c) { return c > 0; }); })
        .map(function (s) {
          return { type: "bar", name: s.state, x: d.sites, y: s.counts, marker: { color: STATE_COLOURS[s.key] } };
        });
      if (!traces.length) { el.textContent = "No data yet."; return; }
      Plotly.newPlot(el, traces, layout(el, { barmode: "stack", legend: { orientation: "h" } }), CONFIG);
    },
    timeseries: timeseries,
    heatmap: heatmap,
    hbar: hbar,
    timeline: timeline
  };

  function draw(root) {
    root.querySelectorAll(".chart[data-chart]").forEach(function (el) {
      var render = renderers[el.dataset.chart];
      if (render && window.Plotly) { render(el, data(el)); }
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSwap", function (event) { draw(event.target); });
  window.PortalCharts = { renderers: renderers, draw: draw };
})();
