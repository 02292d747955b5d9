// Search-as-you-type pickers: a <select data-picker="URL"> holding only its chosen option (support.forms.PickerSelect)
// becomes a combobox (WAI-ARIA 1.2) that asks URL?q=… as one types and lists at most what the server answers.
// Keyboard: ArrowDown/ArrowUp move through the list, Enter chooses, Escape closes it (a second Escape puts the
// chosen name back), Tab leaves. The select stays in the form, hidden, and carries the chosen id: the server
// validates it as before. data-picker-narrow="node": the form's node narrows the search (a GPU of that node).
(function () {
  "use strict";
  var DELAY_MS = 150, counter = 0;

  function init(select) {
    if (select.dataset.pickerReady) return;
    select.dataset.pickerReady = "1";
    var id = select.id || "picker-" + (++counter), listId = id + "-list", form = select.form;
    var wrap = document.createElement("div"), input = document.createElement("input");
    var list = document.createElement("ul"), status = document.createElement("span");
    wrap.className = "picker";
    input.type = "text";
    input.id = id + "-search";
    input.className = "picker-input";
    input.autocomplete = "off";
    input.spellcheck = false;
    input.placeholder = "Type to search…";
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-expanded", "false");
    input.setAttribute("aria-controls", listId);
    list.id = listId;
    list.className = "picker-list";
    list.setAttribute("role", "listbox");
    list.hidden = true;
    status.className = "sr-only";
    status.setAttribute("role", "status");
    var label = document.querySelector('label[for="' + select.id + '"]');
    if (label) {
      label.htmlFor = input.id;  // the visible label names the box one types in
      list.setAttribute("aria-label", label.textContent.replace("*", "").trim());
    }
    var describedBy = select.getAttribute("aria-describedby");
    if (describedBy) input.setAttribute("aria-describedby", describedBy);
    select.hidden = true;
    select.setAttribute("aria-hidden", "true");
    select.tabIndex = -1;
    select.parentNode.insertBefore(wrap, select);
    wrap.appendChild(input);
    wrap.appendChild(list);
    wrap.appendChild(status);
    wrap.appendChild(select);

    var rows = [], active = -1, timer = null, asked = 0;

    function chosenText() {
      var option = select.options[select.selectedIndex];
      return option && option.value ? option.textContent : "";
    }
    input.value = chosenText();

    function close() {
      list.hidden = true;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
      active = -1;
    }

    function highlight(index) {
      var items = list.querySelectorAll("[role=option]");
      if (!items.length) return;
      active = (index + items.length) % items.length;
      items.forEach(function (item, i) { item.setAttribute("aria-selected", i === active ? "true" : "false"); });
      input.setAttribute("aria-activedescendant", items[active].id);
      items[active].scrollIntoView({ block: "nearest" });
    }

    function choose(row) {
      Array.prototype.slice.call(select.options).forEach(function (option) {
        if (option.value) select.removeChild(option);
      });
      if (row) {
        var option = new Option(row.text, row.id, true, true);
        select.appendChild(option);
      }
      select.value = row ? String(row.id) : "";
      input.value = row ? row.text : "";
      close();
      select.dispatchEvent(new Event("change", { bubbles: true }));
    }

    function show(answer) {
      rows = answer.results;
      list.innerHTML = "";
      rows.forEach(function (row, i) {
        var item = document.createElement("li");
        item.id = listId + "-" + i;
        item.setAttribute("role", "option");
        item.setAttribute("aria-selected", "false");
        item.textContent = row.text;
        if (row.detail) {
          var detail = document.createElement("span");
          detail.className = "picker-detail";
          detail.textContent = row.detail;
          item.appendChild(detail);
        }
        // mousedown, not click: the input keeps the focus (a blur would close the list first).
        item.addEventListener("mousedown", function (event) { event.preventDefault(); choose(row); });
        list.appendChild(item);
      });
      if (!rows.length) {
        var none = document.createElement("li");
        none.className = "picker-none";
        none.textContent = "Nothing matches.";
        list.appendChild(none);
      } else if (answer.more) {
        var more = document.createElement("li");
        more.className = "picker-more";
        more.textContent = "More match: type more of the name.";
        list.appendChild(more);
      }
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
      status.textContent = rows.length ? rows.length + (answer.more ? "+" : "") + " found" : "Nothing matches";
      active = -1;
    }

    function search() {
      var url = new URL(select.dataset.picker, window.location.href);
      // The chosen name as it stands: browse from the start (ArrowDown on a chosen GPU lists its node's GPUs).
      url.searchParams.set("q", input.value === chosenText() ? "" : input.value);
      var narrow = select.dataset.pickerNarrow && form && form.elements[select.dataset.pickerNarrow];
      if (narrow && narrow.value) url.searchParams.set(select.dataset.pickerNarrow, narrow.value);
      var mine = ++asked;
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : { results: [], more: false }; })
        .then(function (answer) { if (mine === asked && document.activeElement === input) show(answer); });
    }

    input.addEventListener("input", function () {
      asked++;  // an answer to what was typed before is no longer wanted
      close();
      clearTimeout(timer);
      timer = setTimeout(search, DELAY_MS);
    });
    input.addEventListener("focus", function () { if (!input.value) search(); });
    input.addEventListener("keydown", function (event) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        if (list.hidden) { search(); } else { highlight(active + (event.key === "ArrowDown" ? 1 : -1)); }
        event.preventDefault();
      } else if (event.key === "Enter" && !list.hidden) {
        if (active >= 0) choose(rows[active]);
        event.preventDefault();  // Enter in the list chooses; it does not send the form
      } else if (event.key === "Escape") {
        if (!list.hidden) { close(); } else { input.value = chosenText(); }
        event.preventDefault();
        event.stopPropagation();
      }
    });
    input.addEventListener("blur", function () {
      close();
      if (!input.value.trim()) { if (select.value) choose(null); } else { input.value = chosenText(); }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("select[data-picker]").forEach(init);
  });
})();
