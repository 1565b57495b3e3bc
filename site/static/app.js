// cultureboard: sortable and filterable tables. No inline handlers, no network access.
// A header click sorts its column (numbers numerically, by each cell's data-sort value when it has one;
// empty cells last), a second click reverses; an <input class="filter" data-table="ID"> hides the rows
// of table ID that do not contain its text.
(function () {
  "use strict";

  function sortKey(cell) {
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    if (raw === "") return null;
    var n = Number(raw);
    return isNaN(n) ? raw.toLowerCase() : n;
  }

  function compare(a, b) {
    if (typeof a === typeof b) return a < b ? -1 : a > b ? 1 : 0;
    return typeof a === "number" ? -1 : 1;
  }

  function sortBy(table, th) {
    var column = Array.prototype.indexOf.call(th.parentNode.children, th);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row) {
      return { row: row, key: sortKey(row.cells[column]) };
    });
    rows.sort(function (x, y) {
      if (x.key === null || y.key === null) return (x.key === null) - (y.key === null);
      return ascending ? compare(x.key, y.key) : compare(y.key, x.key);
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortBy(table, th);
        }
      });
    });
  });

  document.querySelectorAll("input.filter").forEach(function (input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    if (!table) return;
    input.addEventListener("input", function () {
      var query = input.value.trim().toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        row.hidden = query !== "" && row.textContent.toLowerCase().indexOf(query) === -1;
      });
    });
  });

  document.documentElement.classList.add("js");
})();
