(function () {
  "use strict";
  var table = document.querySelector("table[data-interactive]");
  var root = document.documentElement;
  if (!table) { root.setAttribute("data-ready", "1"); return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var input = document.getElementById("search");
  var shown = document.getElementById("shown");
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    var raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent;
    if (!numeric) { return raw.toLowerCase(); }
    var value = parseFloat(raw);
    return isNaN(value) ? -Infinity : value;
  }
  function filter() {
    var query = input.value.trim().toLowerCase();
    var count = 0;
    rows.forEach(function (row) {
      var hit = !query || row.textContent.toLowerCase().indexOf(query) !== -1;
      row.hidden = !hit;
      if (hit) { count += 1; }
    });
    shown.textContent = String(count);
    table.setAttribute("data-filter", query);
  }
  function sortBy(index, descending) {
    var numeric = headers[index].getAttribute("data-type") === "num";
    var keyed = rows.map(function (row, position) {
      return { row: row, key: cellValue(row, index, numeric), position: position };
    });
    keyed.sort(function (x, y) {
      var order = x.key < y.key ? -1 : x.key > y.key ? 1 : 0;
      return (descending ? -order : order) || x.position - y.position;
    });
    keyed.forEach(function (entry) { body.appendChild(entry.row); });
    rows = keyed.map(function (entry) { return entry.row; });
    headers.forEach(function (th) { th.removeAttribute("aria-sort"); });
    headers[index].setAttribute("aria-sort", descending ? "descending" : "ascending");
    table.setAttribute("data-sorted", headers[index].getAttribute("data-key") + (descending ? ":desc" : ":asc"));
  }
  headers.forEach(function (th, index) {
    var button = th.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      sortBy(index, th.getAttribute("aria-sort") === "ascending");
    });
  });
  input.addEventListener("input", filter);
  var params = new URLSearchParams(window.location.search);
  if (params.get("q")) { input.value = params.get("q"); }
  var key = params.get("sort");
  if (key) {
    headers.forEach(function (th, index) {
      if (th.getAttribute("data-key") === key) { sortBy(index, params.get("dir") === "desc"); }
    });
  }
  filter();
  root.setAttribute("data-ready", "1");
})();
