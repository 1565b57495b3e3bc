// cultureboard: the search box in every page's header. It reads the index that search-index.js (at the site root)
// sets as window.cultureboardSearch: [{label, kind, href}], href relative to the site root. No network access,
// nothing stored; results are built as text nodes, so a label is never read as HTML.
//
// Typing lists up to LIMIT entries whose label and kind contain every typed word (case and accents ignored), in
// index order; Enter opens the first. Without script (or without the index) the box stays hidden.
(function () {
  "use strict";

  var LIMIT = 20;
  var box = document.querySelector("div.search");
  var index = window.cultureboardSearch;
  if (!box || !Array.isArray(index)) return;
  var input = box.querySelector("input");
  var list = box.querySelector("ul");
  var root = box.getAttribute("data-root") || "";

  function fold(text) {
    return text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  }

  var haystacks = index.map(function (e) { return fold(e.label + " " + e.kind); });

  function matches(query) {
    var words = fold(query).split(/\s+/).filter(Boolean);
    if (!words.length) return [];
    var found = [];
    for (var i = 0; i < index.length && found.length < LIMIT; i++) {
      var hay = haystacks[i];
      if (words.every(function (w) { return hay.indexOf(w) !== -1; })) found.push(index[i]);
    }
    return found;
  }

  function show() {
    var found = matches(input.value);
    list.textContent = "";
    found.forEach(function (e) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = root + e.href;
      link.textContent = e.label;
      var kind = document.createElement("span");
      kind.className = "kind";
      kind.textContent = " " + e.kind;
      item.appendChild(link);
      item.appendChild(kind);
      list.appendChild(item);
    });
    list.hidden = !found.length && !input.value.trim();
    if (!found.length && input.value.trim()) {
      var none = document.createElement("li");
      none.textContent = "Nothing found";
      list.appendChild(none);
    }
  }

  input.addEventListener("keydown", function (event) {
    if (event.key !== "Enter") return;
    event.preventDefault();
    var first = list.querySelector("a");
    if (first) window.location.href = first.href;
  });
  input.addEventListener("input", show);
  box.hidden = false;
})();
