// cultureboard: a leaderboard's filters by what the submissions declare (weights open or closed, release date,
// size in parameters). Each <tr> of the table carries data-weights, data-release_date and data-parameters where its
// submission.yaml declares them; each control of a .board-filters[data-table="ID"] box names the field it filters
// (data-filter-field) and, for a range, its bound (data-bound="min" | "max", both inclusive). A row is hidden (class
// filtered-out) when a set filter rejects it, or when it does not declare the field a set filter reads. Rows are only
// hidden: ranks stay those of the whole board, and the note (#ID-filtered) says how many rows are shown. No network
// access, nothing stored.
(function () {
  "use strict";

  function accepts(control, row) {
    var want = control.value.trim();
    if (want === "") return true;
    var field = control.getAttribute("data-filter-field"), have = row.getAttribute("data-" + field);
    if (have === null || have === "") return false;
    if (control.getAttribute("data-bound") === null) return have === want;
    var a = field === "parameters" ? Number(have) : have, b = field === "parameters" ? Number(want) : want;
    if (field === "parameters" && isNaN(b)) return true;  // not a number yet (the box is being typed in)
    return control.getAttribute("data-bound") === "min" ? a >= b : a <= b;
  }

  document.querySelectorAll(".board-filters[data-table]").forEach(function (box) {
    var id = box.getAttribute("data-table"), table = document.getElementById(id);
    var note = document.getElementById(id + "-filtered");
    if (!table || !note) return;
    var controls = box.querySelectorAll("[data-filter-field]");
    function apply() {
      var rows = table.tBodies[0].rows, shown = 0;
      var active = Array.prototype.some.call(controls, function (c) { return c.value.trim() !== ""; });
      Array.prototype.forEach.call(rows, function (row) {
        var keep = Array.prototype.every.call(controls, function (c) { return accepts(c, row); });
        row.classList.toggle("filtered-out", !keep);
        shown += keep ? 1 : 0;
      });
      note.hidden = !active;
      note.textContent = active ? "Filtered: " + shown + " of " + rows.length + " rows shown. Ranks are those of " +
        "the whole board; rows that do not declare a filtered field are hidden." : "";
    }
    controls.forEach(function (c) {
      c.addEventListener("input", apply);
      c.addEventListener("change", apply);
    });
    apply();
  });
})();
