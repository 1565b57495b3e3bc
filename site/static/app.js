// cultureboard: sortable and filterable tables, prompt filters and the world map's choice. No inline handlers,
// no network access, nothing stored.
//
// Tables: a header click (or Enter / Space on the focused header) sorts its column by each cell's data-sort value
// (numbers numerically, empty cells last). The first sort puts the best first: descending for a column marked
// data-better="higher", ascending for "lower" and for unmarked columns; sorting again reverses. aria-sort tells
// the order; a click on a link in a header (a metric's page, the trust page) follows the link instead. An <input
// class="filter" data-table="ID"> hides the rows of table ID that do not contain its text. Sticky columns (classes
// s0, s1, ... from the left): each table's --s<k> is the width of its sticky columns left of column k, measured
// on load, on resize and after filtering; where they are wider together than the table's box, only s0 sticks.
// Prompt lists: each <select data-field="F"> of a .filters[data-list="ID"] group keeps the items of list ID whose
// data-F equals its value ("" = all). Map: a <select class="map-select" data-target="ID"> recolours the country
// paths of figure ID from the figure's data-map JSON {countries, names, vmin, vmax, digits, choices: [{label,
// values, low, high}]} with the same viridis ramp as the SVG; where a choice's values spread less than the median
// width of their 95% CIs (site/plots.py colour_is_noise: fewer than two values or no CI: coloured), every value is
// one light grey and the map's note (spread, width) replaces its legend; with the card's smallest meaningful
// difference (data.smallest), a value whose difference from the reference (data.centre, else the choice's mean)
// does not clear it (site/plots.py meaningful) is that light grey too, and the legend's neutral line names the
// reference.
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
    var current = th.getAttribute("aria-sort");
    var best = th.getAttribute("data-better") === "higher" ? "descending" : "ascending";
    var order = current === null ? best : current === "ascending" ? "descending" : "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", order);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows).map(function (row, index) {
      return { row: row, key: sortKey(row.cells[column]), index: index };
    });
    rows.sort(function (x, y) {
      if (x.key === null || y.key === null) return (x.key === null) - (y.key === null) || x.index - y.index;
      var c = order === "ascending" ? compare(x.key, y.key) : compare(y.key, x.key);
      return c || x.index - y.index;
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th) {
      th.tabIndex = 0;
      th.setAttribute("role", "columnheader");
      th.addEventListener("click", function (event) {
        if (!event.target.closest("a")) sortBy(table, th);
      });
      th.addEventListener("keydown", function (event) {
        if ((event.key === "Enter" || event.key === " ") && event.target === th) {
          event.preventDefault();
          sortBy(table, th);
        }
      });
    });
  });

  function stickyOffsets() {
    document.querySelectorAll("thead th.s1").forEach(function (first) {
      var table = first.closest("table"), left = 0;
      table.classList.remove("unstick");
      table.querySelectorAll("thead th.sticky").forEach(function (th, k) {
        if (k) table.style.setProperty("--s" + k, left + "px");
        left += th.getBoundingClientRect().width;
      });
      // sticky columns wider than their box cannot all stay in view (they would cover each other): only s0 sticks
      if (left > table.parentElement.clientWidth) table.classList.add("unstick");
    });
  }

  document.querySelectorAll("input.filter").forEach(function (input) {
    var table = document.getElementById(input.getAttribute("data-table"));
    if (!table) return;
    input.addEventListener("input", function () {
      var query = input.value.trim().toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        row.hidden = query !== "" && row.textContent.toLowerCase().indexOf(query) === -1;
      });
      stickyOffsets();
    });
  });

  document.querySelectorAll(".filters[data-list]").forEach(function (group) {
    var list = document.getElementById(group.getAttribute("data-list"));
    var selects = group.querySelectorAll("select[data-field]");
    var count = group.querySelector(".count");
    if (!list) return;
    function apply() {
      var shown = 0;
      Array.prototype.forEach.call(list.children, function (item) {
        var keep = Array.prototype.every.call(selects, function (s) {
          return s.value === "" || item.getAttribute("data-" + s.getAttribute("data-field")) === s.value;
        });
        item.hidden = !keep;
        shown += keep ? 1 : 0;
      });
      if (count) count.textContent = shown + " of " + list.children.length + " prompts";
    }
    selects.forEach(function (s) { s.addEventListener("change", apply); });
    apply();
  });

  var VIRIDIS = [[0x44, 0x01, 0x54], [0x3b, 0x52, 0x8b], [0x21, 0x91, 0x8c], [0x5e, 0xc9, 0x62], [0xfd, 0xe7, 0x25]];
  var NO_VALUE = "#b9b9b9", UNCOLOURED = "#d3d3d3";

  function colour(t) {
    t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
    var i = Math.min(Math.floor(t), VIRIDIS.length - 2), f = t - i;
    return "#" + [0, 1, 2].map(function (k) {
      var v = Math.round(VIRIDIS[i][k] + (VIRIDIS[i + 1][k] - VIRIDIS[i][k]) * f);
      return (v < 16 ? "0" : "") + v.toString(16);
    }).join("");
  }

  // [spread, median CI width] where the spread is the smaller, else null (plots.colour_is_noise)
  function noise(choice) {
    var values = [], widths = [];
    choice.values.forEach(function (v, k) {
      if (v === null) return;
      values.push(v);
      if (choice.low[k] !== null && choice.high[k] !== null) widths.push(choice.high[k] - choice.low[k]);
    });
    if (values.length < 2 || !widths.length) return null;
    widths.sort(function (a, b) { return a - b; });
    var m = widths.length >> 1, typical = widths.length % 2 ? widths[m] : (widths[m - 1] + widths[m]) / 2;
    var spread = Math.max.apply(null, values) - Math.min.apply(null, values);
    return spread < typical ? [spread, typical] : null;
  }

  // the choice's reference (plots.reference_of): the data's centre, else the mean of its values
  function reference(data, choice) {
    if (data.centre !== null && data.centre !== undefined) return data.centre;
    var values = choice.values.filter(function (v) { return v !== null; });
    return values.length ? values.reduce(function (a, b) { return a + b; }, 0) / values.length : null;
  }

  // whether the value's difference from ref clears data.smallest (plots.meaningful, disparity.clears)
  function meaningful(data, value, low, high, ref) {
    if (!data.smallest || data.smallest <= 0 || ref === null) return true;
    if (low === null || high === null) { low = value; high = value; }
    return low - ref >= data.smallest || high - ref <= -data.smallest;
  }

  document.querySelectorAll("select.map-select").forEach(function (select) {
    var figure = document.getElementById(select.getAttribute("data-target"));
    if (!figure) return;
    var data = JSON.parse(figure.getAttribute("data-map"));
    var span = (data.vmax - data.vmin) || 1;
    var label = figure.querySelector(".map-label");
    var legend = figure.querySelector(".legend"), note = figure.querySelector(".uncoloured");
    select.addEventListener("change", function () {
      var choice = data.choices[Number(select.value)], found = noise(choice), d = data.digits;
      var ref = reference(data, choice), neutral = figure.querySelector(".neutral-text");
      data.countries.forEach(function (iso, k) {
        var value = choice.values[k], low = choice.low[k], high = choice.high[k], e = d;
        var ci = value !== null && low !== null && high !== null;
        while (ci && low !== high && e < 10 && low.toFixed(e) === high.toFixed(e)) e++;  // bounds that print apart
        var text = ci ? value.toFixed(e) + " (95% CI " + low.toFixed(e) + " to " + high.toFixed(e) + ")" :
          value === null ? "no data" : value.toFixed(d);
        figure.querySelectorAll('path[data-iso="' + iso + '"]').forEach(function (path) {
          var fill = found || !meaningful(data, value, low, high, ref) ? UNCOLOURED : colour((value - data.vmin) / span);
          path.setAttribute("fill", value === null ? NO_VALUE : fill);
          var title = path.querySelector("title");
          if (title) title.textContent = data.names[k] + ": " + text;
        });
      });
      if (found) {  // as many decimals as tell the two numbers apart (plots._distinct_digits)
        while (d < 6 && found[0] !== found[1] && found[0].toFixed(d) === found[1].toFixed(d)) d++;
        note.querySelector(".spread").textContent = found[0].toFixed(d);
        note.querySelector(".width").textContent = found[1].toFixed(d);
      }
      if (neutral && ref !== null) {  // plots.neutral_text
        neutral.textContent = "difference from " + (data.centre !== null && data.centre !== undefined ? "the target" :
          "the mean") + " (" + ref.toFixed(d) + ") not clearly beyond \u00b1" + data.smallest;
      }
      legend.setAttribute("display", found ? "none" : "inline");
      note.setAttribute("display", found ? "inline" : "none");
      if (label) label.textContent = choice.label;
    });
  });

  document.documentElement.classList.add("js");
  stickyOffsets();
  window.addEventListener("resize", stickyOffsets);
})();
