// Memoree inspector: optional progressive enhancement. Every page works without it.
// Loaded as a same-origin file (the Content-Security-Policy forbids inline script).
"use strict";

// Marks the document so styles (and tests) can tell the script ran.
document.documentElement.classList.add("js");

document.addEventListener("DOMContentLoaded", function () {
  // A broader horizon needs a reason: make the browser ask for one before submitting.
  document.querySelectorAll("form.horizon").forEach(function (form) {
    var select = form.querySelector("select[name=horizon]");
    var reason = form.querySelector("input[name=reason]");
    if (!select || !reason) {
      return;
    }
    var sync = function () {
      var broad = select.value !== "ambient";
      reason.required = broad;
      form.classList.toggle("broad", broad);
    };
    select.addEventListener("change", sync);
    sync();
  });

  // Scroll each highlighted evidence span into view inside its (scrollable) source block.
  document.querySelectorAll("pre.source").forEach(function (pre) {
    var mark = pre.querySelector("mark.cited");
    if (mark && pre.scrollHeight > pre.clientHeight) {
      pre.scrollTop = Math.max(0, mark.offsetTop - pre.offsetTop - pre.clientHeight / 3);
    }
  });
});
