// cultureboard: compare two models (compare.html). Each model's data is a script, models/<key>.data.js, that adds
// window.cultureboardModels[key] = {key, name, prompt_sets: [{prompt_set, title, direction, target, chance, standin, overall,
// countries, topics, images: {prompt_id: [thumbnail, prompt text]}}]}, a cell [value, ci_low, ci_high, n_prompts]; a chosen model's script is added to the page
// (a page opened from file:// may load a sibling script, not fetch a file). ?a=KEY&b=KEY preselects the two.
// Everything is built as text nodes: no name is read as HTML.
(function () {
  "use strict";

  var out = document.getElementById("comparison");
  var pick = {a: document.getElementById("compare-a"), b: document.getElementById("compare-b")};
  if (!out || !pick.a || !pick.b) return;

  function load(select, done) {
    var key = select.value, models = window.cultureboardModels || {};
    if (models[key]) { done(models[key]); return; }
    var script = document.createElement("script");
    script.src = select.selectedOptions[0].getAttribute("data-src");
    script.onload = function () { done((window.cultureboardModels || {})[key]); };
    document.head.appendChild(script);
  }

  function fmt(x, d) { return x === null || x === undefined ? "—" : x.toFixed(d === undefined ? 3 : d); }
  // the fewest decimals, from 3 up to 10, at which an interval's bounds print differently (as cells.at_precision)
  function digits(low, high) {
    var d = 3;
    while (low !== high && d < 10 && low.toFixed(d) === high.toFixed(d)) { d += 1; }
    return d;
  }
  // a cell's value and interval; "stand-in" after the values of a row scored by tiny random stand-ins
  function shown(cell, set) {
    if (!cell) return "—";
    var d = cell[1] === null ? 3 : digits(cell[1], cell[2]);
    return fmt(cell[0], d) + (cell[1] === null ? " (no CI)" : " [" + fmt(cell[1], d) + ", " + fmt(cell[2], d) + "]") +
      " n=" + cell[3] + (set && set.standin ? " · stand-in: measures nothing" : "");
  }
  // "A" or "B" where the CIs are apart (the better one by the headline's direction), else "" (not established)
  function better(set, a, b) {
    if (!a || !b || a[1] === null || b[1] === null || set.direction === "none") return "";
    if (a[1] <= b[2] && b[1] <= a[2]) return "";
    var key = function (c) { return set.direction === "target" ? -Math.abs(c[0] - set.target) : set.direction === "lower" ? -c[0] : c[0]; };
    return key(a) > key(b) ? "A" : "B";
  }
  function verdict(set, a, b) {
    if (!a || !b) return "not both scored";
    if (set.direction === "none") return "descriptive: not compared";
    var w = better(set, a, b);
    return w ? "differ: " + w + " better" : "CIs overlap: not established";
  }

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }

  function table(id, head, rows) {
    var box = el("div", undefined, "scroll"), t = el("table"), thead = el("thead"), tr = el("tr"), body = el("tbody");
    t.id = id;
    head.forEach(function (h) { tr.appendChild(el("th", h)); });
    thead.appendChild(tr);
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (v, i) { row.appendChild(el("td", v, i === r.length - 1 ? "verdict" : "")); });
      body.appendChild(row);
    });
    t.appendChild(thead); t.appendChild(body); box.appendChild(t);
    return box;
  }

  function sliced(field, label, A, B, shared) {
    var rows = [];
    shared.forEach(function (pair) {
      var set = pair[0], other = pair[1], names = {};
      Object.keys(set[field]).concat(Object.keys(other[field])).forEach(function (n) { names[n] = true; });
      Object.keys(names).sort().forEach(function (n) {
        var a = set[field][n], b = other[field][n];
        rows.push([set.prompt_set, n, shown(a, set), shown(b, other), verdict(set, a, b)]);
      });
    });
    return rows.length ? table("compare-" + field, ["Prompt set", label, A.name, B.name, "Difference"], rows) : el("p", "No " + label.toLowerCase() + " slices in common.");
  }

  // each shared prompt set's prompts that both models have a thumbnail of: the prompt, then A's and B's image
  function images(A, B, shared) {
    var box = el("div", undefined, "compare-images"), count = 0;
    box.id = "compare-images";
    shared.forEach(function (pair) {
      var a = pair[0].images || {}, b = pair[1].images || {};
      Object.keys(a).sort().filter(function (p) { return b[p]; }).forEach(function (p) {
        var figure = el("figure", undefined, "pair"), caption = el("figcaption", pair[0].prompt_set + ": " + a[p][1]);
        figure.appendChild(caption);
        [[A, a[p]], [B, b[p]]].forEach(function (side) {
          var item = el("div"), img = el("img");
          img.src = side[1][0];
          img.alt = side[0].name + ": " + side[1][1];
          item.appendChild(img);
          item.appendChild(el("span", side[0].name));
          figure.appendChild(item);
        });
        box.appendChild(figure);
        count += 1;
      });
    });
    return count ? box : el("p", "No images of both models on the same prompts.");
  }

  function draw(A, B) {
    out.textContent = "";
    var byName = {};
    B.prompt_sets.forEach(function (s) { byName[s.prompt_set] = s; });
    var shared = A.prompt_sets.filter(function (s) { return byName[s.prompt_set]; }).map(function (s) { return [s, byName[s.prompt_set]]; });
    out.appendChild(el("h2", "Headline over all prompts"));
    if (!shared.length) { out.appendChild(el("p", "These two models share no prompt set.", "empty")); return; }
    out.appendChild(table("compare-overall", ["Prompt set", "Headline", A.name, B.name, "Difference"], shared.map(function (p) {
      return [p[0].prompt_set, p[0].title + (p[0].chance ? " (chance level: " + p[0].chance + ")" : ""),
              shown(p[0].overall, p[0]), shown(p[1].overall, p[1]), verdict(p[0], p[0].overall, p[1].overall)];
    })));
    out.appendChild(el("h2", "Per country"));
    out.appendChild(sliced("countries", "Country", A, B, shared));
    out.appendChild(el("h2", "Per topic"));
    out.appendChild(sliced("topics", "Topic: category", A, B, shared));
    out.appendChild(el("h2", "Images on the same prompts"));
    out.appendChild(images(A, B, shared));
  }

  function update() {
    load(pick.a, function (A) { load(pick.b, function (B) { if (A && B) draw(A, B); }); });
  }

  var query = new URLSearchParams(window.location.search);
  ["a", "b"].forEach(function (side) {
    var want = query.get(side);
    if (want && Array.prototype.some.call(pick[side].options, function (o) { return o.value === want; })) pick[side].value = want;
    pick[side].addEventListener("change", update);
  });
  update();
})();
