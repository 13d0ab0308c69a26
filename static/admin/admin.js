// Accord admin console: progressive enhancement only. Every page reads and
// every form submits without this file.
(function () {
  "use strict";

  function offsetValue(minutes) {
    var sign = minutes < 0 ? "-" : "+";
    var m = Math.abs(minutes);
    var h = Math.floor(m / 60), r = m % 60;
    return sign + (h < 10 ? "0" : "") + h + ":" + (r < 10 ? "0" : "") + r;
  }

  // Sign-in: pre-select the browser's current UTC offset.
  document.querySelectorAll("select[data-local-offset]").forEach(function (sel) {
    var want = offsetValue(-new Date().getTimezoneOffset());
    Array.prototype.forEach.call(sel.options, function (o) { o.selected = o.value === want; });
  });

  // Settings form: come back to this page afterwards.
  document.querySelectorAll("input[data-back]").forEach(function (input) {
    input.value = window.location.pathname + window.location.search;
  });

  // Condition editor: the op list follows the value type (NUMBER has no
  // regex ops). The server accepts any op; this only narrows the choice.
  var NUMBER_OPS = ["eq", "neq", "gt", "gte", "lt", "lte", "in", "not_in", "contains", "not_contains"];
  function narrow(typeSelect) {
    var op = document.getElementById(typeSelect.getAttribute("data-ops"));
    if (!op) { return; }
    var number = typeSelect.value === "NUMBER";
    Array.prototype.forEach.call(op.options, function (o) {
      var hide = number && NUMBER_OPS.indexOf(o.value) < 0;
      o.hidden = hide;
      o.disabled = hide && !o.selected;
    });
  }
  document.querySelectorAll("select[data-ops]").forEach(function (s) {
    narrow(s);
    s.addEventListener("change", function () { narrow(s); });
  });
})();
