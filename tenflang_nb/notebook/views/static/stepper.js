/* The GCP stepper of one TenFlang output: the element with class tf-stepper that holds this
   script. Everything it needs is inside that element:
     script.tf-step-ui    the interactive markup (graph, listing, controls), inert text
     script.tf-step-data  the steps: {intro, start: {id: {value, grad}}, steps: [{
                            l: GCP line, v: value, p: phase, c: caption, x: numbers,
                            n: id of the node that lights up, e: ids of the edges it reads,
                            u: [[id, "value" | "grad", text], ...] label changes}]}
     .tf-step-static      the table a reader sees where scripts do not run (hidden here)
   No kernel, no network, no global state: two steppers on a page never meet. Position k
   (0..n) means the first k steps have run; the current line is step k - 1. */
(function (root) {
  if (!root || root.getAttribute("data-tf-bound")) { return; }
  var dataEl = root.querySelector("script.tf-step-data");
  var uiEl = root.querySelector("script.tf-step-ui");
  if (!dataEl || !uiEl) { return; }
  root.setAttribute("data-tf-bound", "1");
  var data = JSON.parse(dataEl.textContent);
  var steps = data.steps;
  var n = steps.length;

  var live = document.createElement("div");
  live.innerHTML = uiEl.textContent;
  live = live.firstElementChild;
  var still = root.querySelector(".tf-step-static");
  root.insertBefore(live, still);
  if (still) { still.style.display = "none"; }

  function q(sel) { return live.querySelector(sel); }
  function byId(id) { return live.querySelector('[id="' + id + '"]'); }
  var slider = q(".tf-step-slider");
  var count = q(".tf-step-count");
  var what = q(".tf-step-what");
  var numbers = q(".tf-step-numbers");
  var pane = q(".tf-step-gcp");
  var play = q(".tf-step-play");
  var speed = q(".tf-step-speed");
  var buttons = {
    first: q(".tf-step-first"), back: q(".tf-step-back"),
    next: q(".tf-step-next"), last: q(".tf-step-last")
  };
  var rows = {};
  live.querySelectorAll("[data-tf-step-line]").forEach(function (row) {
    rows[row.getAttribute("data-tf-step-line")] = row;
  });
  var slots = {};  /* "id|value" -> the label element, found once */
  function slot(id, which) {
    var key = id + "|" + which;
    if (!(key in slots)) {
      var node = byId(id);
      slots[key] = node ? node.querySelector(".tf-slot-" + which) : null;
    }
    return slots[key];
  }
  function label(id, which, text) {
    var el = slot(id, which);
    if (!el) { return; }
    /* an SVG label reads "value 0.5"; a table cell only "0.5" */
    el.textContent = el.tagName.toLowerCase() === "text" ? which + " " + text : text;
  }

  var pos = 0;
  var timer = null;
  var lit = [];

  function reveal(row) {
    /* scroll the listing (never the page) so the current line sits in its upper third */
    var paneBox = pane.getBoundingClientRect();
    var box = row.getBoundingClientRect();
    var top = box.top - paneBox.top + pane.scrollTop;
    var margin = 2 * box.height;
    if (top < pane.scrollTop + margin ||
        top + box.height > pane.scrollTop + pane.clientHeight - margin) {
      pane.scrollTop = Math.max(0, top - pane.clientHeight / 3);
    }
  }

  function show(k) {
    pos = Math.max(0, Math.min(n, k));
    var texts = {};
    Object.keys(data.start).forEach(function (id) {
      var rowsOf = data.start[id];
      Object.keys(rowsOf).forEach(function (which) { texts[id + "|" + which] = rowsOf[which]; });
    });
    for (var i = 0; i < pos; i++) {
      steps[i].u.forEach(function (u) { texts[u[0] + "|" + u[1]] = u[2]; });
    }
    Object.keys(texts).forEach(function (key) {
      var cut = key.lastIndexOf("|");
      label(key.slice(0, cut), key.slice(cut + 1), texts[key]);
    });
    steps.forEach(function (s, j) {
      var row = rows[s.l];
      if (!row) { return; }
      row.classList.toggle("tf-step-done", j < pos);
      row.classList.remove("tf-step-cur");
      row.querySelector(".tf-step-val").textContent = j < pos ? "= " + s.v : "";
    });
    lit.forEach(function (el) { el.classList.remove("tf-step-node", "tf-step-edge"); });
    lit = [];
    var cur = pos > 0 ? steps[pos - 1] : null;
    if (cur) {
      var row = rows[cur.l];
      if (row) { row.classList.add("tf-step-cur"); reveal(row); }
      if (cur.n) {
        var node = byId(cur.n);
        if (node) { node.classList.add("tf-step-node"); lit.push(node); }
      }
      cur.e.forEach(function (id) {
        var edge = byId(id);
        if (edge) { edge.classList.add("tf-step-edge"); lit.push(edge); }
      });
      what.textContent = cur.c;
      numbers.textContent = cur.x;
    } else {
      pane.scrollTop = 0;
      what.textContent = data.intro;
      numbers.textContent = "";
    }
    var phase = cur ? (cur.p === "forward" ? "forward pass" : "backward pass") : "not started";
    count.textContent = "step " + pos + " of " + n + " · " + phase +
      (cur ? " · line " + cur.l : "");
    slider.value = String(pos);
    buttons.first.disabled = buttons.back.disabled = pos === 0;
    buttons.next.disabled = buttons.last.disabled = pos === n;
  }

  function pause() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    play.textContent = "▶ play";
    live.removeAttribute("data-tf-playing");
  }
  function start() {
    if (pos >= n) { show(0); }
    var perSecond = parseFloat(speed.value) || 1;
    timer = setInterval(function () {
      if (pos >= n) { pause(); return; }
      show(pos + 1);
      if (pos >= n) { pause(); }
    }, 1000 / perSecond);
    play.textContent = "❚❚ pause";
    live.setAttribute("data-tf-playing", "1");
  }
  function go(k) { pause(); show(k); }

  buttons.first.addEventListener("click", function () { go(0); });
  buttons.back.addEventListener("click", function () { go(pos - 1); });
  buttons.next.addEventListener("click", function () { go(pos + 1); });
  buttons.last.addEventListener("click", function () { go(n); });
  play.addEventListener("click", function () {
    if (timer !== null) { pause(); } else { start(); }
  });
  speed.addEventListener("change", function () {
    if (timer !== null) { pause(); start(); }
  });
  slider.addEventListener("input", function () { go(parseInt(slider.value, 10) || 0); });
  /* The keys. Notebook 7 (and JupyterLab in some setups) handle shortcuts while the key
     event is still on its way down (capture on document), so a listener on the stepper would
     never see an arrow key: this one listens on the way down from the window, acts only on
     keys meant for this stepper (its element focused, no modifier: Ctrl+S still saves) and
     goes away with the stepper. */
  function onKey(event) {
    if (!live.isConnected) { window.removeEventListener("keydown", onKey, true); return; }
    var target = event.target;
    if (!(target instanceof Node) || !live.contains(target) ||
        event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) { return; }
    if (target === slider || target === speed) {
      /* they move themselves with these keys: only keep the notebook from acting too */
      if (/^(Arrow|Home$|End$|Page)/.test(event.key)) { event.stopPropagation(); }
      return;
    }
    var to = null;
    if (event.key === "ArrowRight") { to = pos + 1; }
    else if (event.key === "ArrowLeft") { to = pos - 1; }
    else if (event.key === "Home") { to = 0; }
    else if (event.key === "End") { to = n; }
    if (to === null) { return; }
    event.stopPropagation();
    event.preventDefault();
    go(to);
  }
  window.addEventListener("keydown", onKey, true);
  show(0);
})((function () {
  var script = document.currentScript;
  return (script && script.closest(".tf-stepper")) || document.getElementById("__TF_STEPPER__");
})());
