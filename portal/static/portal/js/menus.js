// The top bar's menus open on hover and on focus (CSS: .menu:hover, .menu:focus-within). This adds what CSS
// cannot: Escape closes the open menu and gives the focus back to its button, ArrowDown on a button enters its
// items, and aria-expanded tells screen readers whether a menu is open.
(function () {
  "use strict";

  function isOpen(menu) {
    var items = menu.querySelector(".menu-items");
    return !!items && getComputedStyle(items).display !== "none";
  }

  function sync(menu) {
    var button = menu.querySelector(".menu-button");
    if (button) button.setAttribute("aria-expanded", isOpen(menu) ? "true" : "false");
  }

  function open(menu) {
    menu.classList.remove("closed");
    sync(menu);
  }

  function init(menu) {
    var button = menu.querySelector(".menu-button");
    if (!button) return;
    sync(menu);
    menu.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && isOpen(menu)) {
        menu.classList.add("closed");  // stays closed while the focus is back on its button
        button.focus();
        sync(menu);
        event.preventDefault();
      } else if (event.target === button && (event.key === "ArrowDown" || event.key === "Enter" || event.key === " ")) {
        open(menu);
        if (event.key === "ArrowDown") {
          var first = menu.querySelector(".menu-items a, .menu-items button");
          if (first) first.focus();
          event.preventDefault();
        }
      } else if ((event.key === "ArrowDown" || event.key === "ArrowUp") && event.target.closest(".menu-items")) {
        var items = Array.prototype.slice.call(menu.querySelectorAll(".menu-items a, .menu-items button"));
        var next = items.indexOf(event.target) + (event.key === "ArrowDown" ? 1 : -1);
        if (next >= 0 && next < items.length) items[next].focus();
        event.preventDefault();
      }
    });
    button.addEventListener("click", function () { open(menu); });
    menu.addEventListener("mouseenter", function () { open(menu); });
    menu.addEventListener("mouseleave", function () { sync(menu); });
    menu.addEventListener("focusin", function () { sync(menu); });
    menu.addEventListener("focusout", function (event) {
      if (!menu.contains(event.relatedTarget)) menu.classList.remove("closed");
      setTimeout(function () { sync(menu); }, 0);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll(".topbar .menu"), init);
  });
})();
