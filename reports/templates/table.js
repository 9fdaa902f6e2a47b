// Sortable, filterable tables without any library: click a header to sort (numbers by their
// data-v value), type in the box above a table to keep only rows containing every word.
(function () {
  "use strict";
  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    if (v !== null) { return v === "" ? null : parseFloat(v); }
    return cell.textContent.trim().toLowerCase();
  }
  function compare(a, b) {
    if (a === b) { return 0; }
    if (a === null) { return 1; }
    if (b === null) { return -1; }
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    return String(a) < String(b) ? -1 : 1;
  }
  function sortBy(table, th) {
    var index = th.cellIndex;
    var dir = th.getAttribute("data-dir") === "asc" ? "desc" : "asc";
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("data-dir"); }
    th.setAttribute("data-dir", dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (r, i) { return [cellValue(r, index), i, r]; });
    keyed.sort(function (x, y) {
      var c = compare(x[0], y[0]);
      if (c === 0) { c = x[1] - y[1]; }
      return dir === "asc" ? c : -c;
    });
    var frag = document.createDocumentFragment();
    keyed.forEach(function (k) { frag.appendChild(k[2]); });
    body.appendChild(frag);
  }
  function filter(table, text, counter) {
    var words = text.toLowerCase().split(/\s+/).filter(Boolean);
    var rows = table.tBodies[0].rows;
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var content = rows[i].textContent.toLowerCase();
      var keep = words.every(function (w) { return content.indexOf(w) >= 0; });
      rows[i].style.display = keep ? "" : "none";
      if (keep) { shown++; }
    }
    if (counter) { counter.textContent = shown + " of " + rows.length + " rows shown"; }
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.classList.add("sortable");
      th.addEventListener("click", function () { sortBy(table, th); });
    });
    var box = document.getElementById(table.getAttribute("data-filter") || "");
    var counter = document.getElementById(table.getAttribute("data-count") || "");
    if (box) {
      box.addEventListener("input", function () { filter(table, box.value, counter); });
    }
  });
}());
