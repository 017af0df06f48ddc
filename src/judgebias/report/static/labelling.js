// The labelling page: one pair at a time, blinded, in an order of the annotator's own; state kept in the browser.
"use strict";
(function () {
  var main = document.getElementById("labelling");
  var sample = main.dataset.sample;
  var items = Array.prototype.map.call(document.querySelectorAll("#pairs .item"), function (node) {
    return {
      id: node.dataset.id,
      question: node.querySelector(".q").textContent,
      a: node.querySelector(".a").textContent,
      b: node.querySelector(".b").textContent,
    };
  });
  var storeKey = "judgebias-labels:" + sample;
  var stores = ["localStorage", "sessionStorage"];  // besides the tab's window.name (see load)
  var state = load();
  var words = { "1": "answer 1 is better", "2": "answer 2 is better", t: "tie", s: "skipped" };

  // The state is kept in three places: localStorage (survives closing the browser), sessionStorage and the tab's
  // window.name (both survive a reload of the tab). Chromium has been seen to drop a file:// page's localStorage
  // on reload when the machine is busy; the copy saved last (highest revision) wins.
  function parsed(text) {
    try { return JSON.parse(text || "null"); } catch (ignored) { return null; }
  }
  function isState(saved) {
    return Boolean(saved) && typeof saved === "object" && Boolean(saved.labels) && typeof saved.labels === "object";
  }
  function tabStates() {
    var held = parsed(window.name);
    return held && typeof held === "object" && !Array.isArray(held) ? held : {};
  }
  function load() {
    var copies = [];
    stores.forEach(function (store) {
      try { copies.push(parsed(window[store].getItem(storeKey))); } catch (ignored) {}  // storage may be refused
    });
    copies.push(tabStates()[storeKey]);
    var best = null;
    copies.forEach(function (saved) {
      if (isState(saved) && (!best || (saved.revision || 0) > (best.revision || 0))) best = saved;
    });
    return best || { annotator: "", position: 0, labels: {}, revision: 0 };
  }
  function save() {
    state.revision = (state.revision || 0) + 1;
    var text = JSON.stringify(state);
    stores.forEach(function (store) {
      try { window[store].setItem(storeKey, text); } catch (ignored) {}  // full or refused: the other copies hold it
    });
    var held = tabStates();
    held[storeKey] = state;
    window.name = JSON.stringify(held);
  }

  // FNV-1a of annotator, sample and item id: which answer this annotator sees first, the same on every reload.
  function shownFirst(id) {
    var text = state.annotator + "\u0000" + sample + "\u0000" + id, hash = 0x811c9dc5;
    for (var i = 0; i < text.length; i++) {
      hash ^= text.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return hash & 1 ? "b" : "a";
  }

  function counts() {
    var labelled = 0, skipped = 0;
    items.forEach(function (item) {
      var entry = state.labels[item.id];
      if (entry) entry.label === "skip" ? skipped++ : labelled++;
    });
    return { labelled: labelled, skipped: skipped };
  }

  function show() {
    var c = counts();
    document.getElementById("progress").textContent = state.annotator
      ? state.annotator + ": " + c.labelled + " of " + items.length + " labelled, " + c.skipped + " skipped"
      : "";
    var started = Boolean(state.annotator);
    document.getElementById("who").hidden = started;
    var finished = started && state.position >= items.length;
    document.getElementById("pair").hidden = !started || finished;
    document.getElementById("done").hidden = !finished;
    if (!started || finished) return;
    var item = items[state.position], first = shownFirst(item.id);
    document.getElementById("position").textContent = "pair " + (state.position + 1) + " of " + items.length;
    document.getElementById("question").textContent = item.question;
    document.getElementById("first").textContent = first === "a" ? item.a : item.b;
    document.getElementById("second").textContent = first === "a" ? item.b : item.a;
    var entry = state.labels[item.id];
    document.getElementById("current").textContent = entry ? "your answer: " + words[entry.key] : "";
    Array.prototype.forEach.call(document.querySelectorAll(".keys button"), function (button) {
      button.classList.toggle("chosen", Boolean(entry) && button.dataset.key === entry.key);
    });
  }

  // Key 1 / 2 name the position on screen; the label is stored in the item's frame (a or b) with that order.
  function answer(key) {
    if (!state.annotator) return;
    if (key === "back") {
      state.position = Math.max(0, state.position - 1);
    } else if (state.position < items.length) {
      var item = items[state.position], first = shownFirst(item.id), second = first === "a" ? "b" : "a";
      var label = { "1": first, "2": second, t: "tie", s: "skip" }[key];
      state.labels[item.id] = { key: key, label: label, shown_first: first, at: new Date().toISOString() };
      state.position += 1;
    }
    save();
    show();
  }

  function exportLabels() {
    var lines = items.filter(function (item) { return state.labels[item.id]; }).map(function (item) {
      var entry = state.labels[item.id];
      return JSON.stringify({
        id: item.id, label: entry.label, annotator: state.annotator, shown_first: entry.shown_first,
        sample: sample, labelled_at: entry.at,
      });
    });
    var blob = new Blob([lines.join("\n") + (lines.length ? "\n" : "")], { type: "application/x-ndjson" });
    var link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = "labels-" + (state.annotator || "anonymous").replace(/[^A-Za-z0-9_.-]+/g, "_") + ".jsonl";
    document.body.appendChild(link);
    link.click();
    link.remove();
    document.getElementById("exported").textContent = lines.length + " labels exported as " + link.download;
  }

  document.getElementById("who").addEventListener("submit", function (event) {
    event.preventDefault();
    var name = document.getElementById("annotator").value.trim();
    if (!name) return;
    state.annotator = name;
    save();
    show();
  });
  document.addEventListener("keydown", function (event) {
    if (event.target instanceof HTMLInputElement || event.ctrlKey || event.metaKey || event.altKey) return;
    var key = event.key.toLowerCase();
    if (key === "backspace" || key === "arrowleft") key = "back";
    if (["1", "2", "t", "s", "back"].indexOf(key) >= 0) {
      event.preventDefault();
      answer(key);
    }
  });
  Array.prototype.forEach.call(document.querySelectorAll(".keys button"), function (button) {
    button.addEventListener("click", function () { answer(button.dataset.key); });
  });
  document.getElementById("export").addEventListener("click", exportLabels);
  show();
})();
