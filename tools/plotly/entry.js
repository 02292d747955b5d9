// The portal's plotly.js: the core (scatter: lines and markers) plus the traces portal/static/portal/js/charts.js
// draws (bar, heatmap). A chart type added there must be registered here, then the bundle rebuilt (build.sh).
var Plotly = require('plotly.js/lib/core');

Plotly.register([require('plotly.js/lib/bar'), require('plotly.js/lib/heatmap')]);

module.exports = Plotly;
