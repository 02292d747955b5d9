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

  var renderers = {
    bar: function (el, d) {
      if (!d.x.length) { el.textContent = "No data yet."; return; }
      Plotly.newPlot(el, [{ type: "bar", x: d.x, y: d.y, marker: { color: "#2f6fdb" } }], layout(el), CONFIG);
    },
    "stacked-bar": function (el, d) {
      var traces = d.series.filter(function (s) { return s.counts.some(function (c) { return c > 0; }); })
        .map(function (s) {
          return { type: "bar", name: s.state, x: d.sites, y: s.counts, marker: { color: STATE_COLOURS[s.key] } };
        });
      if (!traces.length) { el.textContent = "No data yet."; return; }
      Plotly.newPlot(el, traces, layout(el, { barmode: "stack", legend: { orientation: "h" } }), CONFIG);
    }
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
