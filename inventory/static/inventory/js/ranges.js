// The range of a telemetry dashboard (utilization, goodput) is one of: a range button, a month, or two dates.
// Choosing one clears the others before htmx sends the form (capture phase: this runs first), so the request
// names one range and the page says which.
(function () {
  "use strict";
  var DATES = ["start", "end"];
  function clear(form, names) {
    names.forEach(function (name) {
      var field = form.elements[name];
      if (field && field.value) { field.value = ""; }
    });
  }
  function uncheck(form) {
    Array.prototype.forEach.call(form.querySelectorAll("input[name=range]"), function (radio) {
      radio.checked = false;
    });
  }
  document.addEventListener("change", function (event) {
    var input = event.target, form = input.form;
    if (!form || !form.classList.contains("filters")) { return; }
    if (input.name === "range") {
      clear(form, ["month"].concat(DATES));
    } else if (input.name === "month" && input.value) {
      clear(form, DATES);
      uncheck(form);
    } else if (DATES.indexOf(input.name) >= 0 && input.value) {
      clear(form, ["month"]);
      uncheck(form);
    }
  }, true);
})();
