/* The GCP stepper of one TenFlang output: the element with class tf-stepper that holds this
   script. Everything it needs is inside that element:
     script.tf-step-ui    the interactive markup (graph, listing, controls), inert text
     script.tf-step-data  the steps: {intro, start: {id: {value, grad}}, palette,
                            heat0: {id: {value: heat}}, steps: [{
                            l: GCP line, v: value, p: phase, c: caption, x: numbers,
                            d: dimension analysis, n: id of the node that lights up,
                            e: ids of the edges it reads,
                            u: [[id, "value" | "grad", text], ...] label changes,
                            h: [[id, "value" | "grad", heat], ...] heatmap changes}]}
                          a heat: {n: name, s: shape, p: a palette code per entry,
                            t: each entry's value as text}
                          predict mode: predict: {intro, q: [{s: the step it stops before,
                            k: the node's id, a: what is asked, t: the question, e: the entry
                            (-1: a number), r: the right value, rt: as shown, tol: within
                            it counts, m: [[wrong value, tolerance, hint], ...],
                            u: label changes shown while asking}], hide: the listing hides
                            the right-hand side (.tf-step-rhs) of the next question's line
                            and every line after it until that question is answered}
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
  var dims = q(".tf-step-dims");
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

  /* the heatmaps: every (id, row) that ever gets one, the <g> of cells drawing it, and the
     heat it shows now (so a step repaints only what changed) */
  var heatKeys = {};
  Object.keys(data.heat0 || {}).forEach(function (id) {
    Object.keys(data.heat0[id]).forEach(function (which) { heatKeys[id + "|" + which] = 1; });
  });
  steps.forEach(function (s) {
    (s.h || []).forEach(function (h) { heatKeys[h[0] + "|" + h[1]] = 1; });
  });
  var painted = {};
  function entry(i, shape) {
    var index = [];
    for (var k = shape.length - 1; k >= 0; k--) {
      index.unshift(i % shape[k]);
      i = Math.floor(i / shape[k]);
    }
    return "[" + index.join(", ") + "]";
  }
  function paint(key, heat) {
    if (painted[key] === heat) { return; }
    painted[key] = heat;
    var cut = key.lastIndexOf("|");
    var node = byId(key.slice(0, cut));
    var group = node && node.querySelector('g.tf-hm[data-tf-hm="' + key.slice(cut + 1) + '"]');
    if (!group) { return; }
    group.querySelectorAll("rect").forEach(function (rect, i) {
      var title = rect.firstElementChild;
      if (!title) { title = rect.appendChild(document.createElementNS(rect.namespaceURI, "title")); }
      if (heat && i < heat.p.length) {
        rect.setAttribute("fill", data.palette[heat.p.charAt(i)]);
        title.textContent = heat.n + entry(i, heat.s) + " = " + heat.t[i];
      } else {
        rect.removeAttribute("fill");  /* the group's: not computed yet */
        title.textContent = "not computed yet";
      }
    });
  }

  var pos = 0;
  var timer = null;
  var lit = [];

  /* Predict mode: before the step s of a question, the stepper asks for the adjoint; the
     answer is compared here with the right value and the usual wrong ones (all computed in
     Python), so it needs no kernel. state[s]: "right" or "revealed" once answered. */
  var predict = data.predict || null;
  var asks = {}, state = {}, tries = {};
  var asking = null;  /* the step whose question is open */
  var askBox = q(".tf-step-ask"), guess = q(".tf-step-guess"), feedback = q(".tf-step-feedback");
  var score = q(".tf-step-score"), outlined = null;
  if (predict) { predict.q.forEach(function (x) { asks[x.s] = x; }); }
  function open(from, to) {
    for (var s = from; s < to; s++) { if (asks[s] && !state[s]) { return s; } }
    return null;
  }
  /* the formula of a line is the answer to its question: until the next open question is
     answered, its line shows no right-hand side and no later line shows at all */
  var lineNumbers = Object.keys(rows).map(Number);
  function conceal() {
    var next = predict && predict.hide ? open(0, n) : null;
    var cut = next === null ? Infinity : steps[next].l;
    lineNumbers.forEach(function (k) {
      var row = rows[k];
      row.style.visibility = k > cut ? "hidden" : "";
      var rhs = row.querySelector(".tf-step-rhs");
      if (rhs) { rhs.style.visibility = k === cut ? "hidden" : ""; }
    });
  }
  function tally() {
    if (!score) { return; }
    var right = 0, done = 0, all = predict.q.length;
    predict.q.forEach(function (x) {
      if (state[x.s]) { done++; }
      if (state[x.s] === "right" && !tries[x.s]) { right++; }
    });
    score.textContent = (done ? right + " of " + done + " first try" : "") +
      (done && done < all ? " · " : "") + (done < all ? (all - done) + " to predict" : "");
  }
  function ask(s) {
    /* the steps before s have run; the line of s is next, its node lit, the question open */
    show(s);
    asking = s;
    var x = asks[s];
    var before = s > 0 ? rows[steps[s - 1].l] : null;
    if (before) { before.classList.remove("tf-step-cur"); }
    lit.forEach(function (el) { el.classList.remove("tf-step-node", "tf-step-edge"); });
    lit = [];
    var row = rows[steps[s].l];
    if (row) { row.classList.add("tf-step-asked"); reveal(row); }
    x.u.forEach(function (u) { label(u[0], u[1], u[2]); });
    var node = x.k ? byId(x.k) : null;
    if (node) { node.classList.add("tf-step-node"); lit.push(node); }
    steps[s].e.forEach(function (id) {
      var edge = byId(id);
      if (edge) { edge.classList.add("tf-step-edge"); lit.push(edge); }
    });
    if (node && x.e >= 0) {
      var cells = node.querySelectorAll('g.tf-hm[data-tf-hm="grad"] rect');
      outlined = cells[x.e] || null;
      if (outlined) { outlined.classList.add("tf-hm-ask"); }
    }
    what.textContent = x.t;
    numbers.textContent = "";
    dims.textContent = "";
    askBox.hidden = false;
    if (guess.getAttribute("data-tf-for") !== String(s)) {  /* a new question: a new answer */
      guess.value = "";
      guess.setAttribute("data-tf-for", String(s));
    }
    guess.setAttribute("aria-label", "your value of " + x.a);
    count.textContent = "step " + pos + " of " + n + " · backward pass · predict " + x.a;
    buttons.next.disabled = buttons.last.disabled = true;
    if (live.contains(document.activeElement)) { guess.focus(); }
  }
  function number(text) {
    text = String(text).trim().replace(/\u2212/g, "-").replace(/\s+/g, "");
    if (text.indexOf(".") < 0) { text = text.replace(",", "."); }
    return /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(text) ? parseFloat(text) : NaN;
  }
  function answered(how, text) {
    var s = asking;
    state[s] = how;
    feedback.textContent = text;
    feedback.setAttribute("data-tf-verdict", how);
    tally();
    show(s + 1);
    live.focus();
  }
  function check() {
    if (asking === null) { return; }
    var x = asks[asking], value = number(guess.value);
    if (isNaN(value)) {
      feedback.textContent = "Type a number, such as 0.25 or -1.5e-3.";
      feedback.setAttribute("data-tf-verdict", "none");
      return;
    }
    if (Math.abs(value - x.r) <= x.tol) {
      answered("right", "✓ Right" + (tries[asking] ? "" : ", first try") + ": " + x.a +
        " = " + x.rt + " (you said " + guess.value.trim() + ").");
      return;
    }
    tries[asking] = (tries[asking] || 0) + 1;
    var known = null;
    x.m.forEach(function (m) {
      if (known === null && Math.abs(value - m[0]) <= m[1]) { known = m[2]; }
    });
    feedback.textContent = "✗ Not " + guess.value.trim() + ". " +
      (known ? "Hint: " + known + "." : "It is not within ±" + x.tol.toPrecision(2) +
       " of the value.") + " Try again, or reveal.";
    feedback.setAttribute("data-tf-verdict", known ? "hint" : "wrong");
    tally();
    guess.select();
  }
  function revealAnswer() {
    if (asking === null) { return; }
    var x = asks[asking];
    answered("revealed", "Revealed: " + x.a + " = " + x.rt + ".");
  }
  if (predict) {
    q(".tf-step-check").addEventListener("click", check);
    q(".tf-step-reveal").addEventListener("click", revealAnswer);
    tally();
  }

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
    asking = null;
    if (askBox) { askBox.hidden = true; }
    if (outlined) { outlined.classList.remove("tf-hm-ask"); outlined = null; }
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
    var heats = {};
    Object.keys(data.heat0 || {}).forEach(function (id) {
      Object.keys(data.heat0[id]).forEach(function (w) { heats[id + "|" + w] = data.heat0[id][w]; });
    });
    for (var j = 0; j < pos; j++) {
      (steps[j].h || []).forEach(function (h) { heats[h[0] + "|" + h[1]] = h[2]; });
    }
    Object.keys(heatKeys).forEach(function (key) { paint(key, heats[key] || null); });
    steps.forEach(function (s, j) {
      var row = rows[s.l];
      if (!row) { return; }
      row.classList.toggle("tf-step-done", j < pos);
      row.classList.remove("tf-step-cur", "tf-step-asked");
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
      dims.textContent = cur.d ? "Shapes: " + cur.d : "";
    } else {
      pane.scrollTop = 0;
      what.textContent = data.intro + (predict ? " " + predict.intro : "");
      numbers.textContent = "";
      dims.textContent = "";
    }
    var phase = cur ? (cur.p === "forward" ? "forward pass" : "backward pass") : "not started";
    count.textContent = "step " + pos + " of " + n + " · " + phase +
      (cur ? " · line " + cur.l : "");
    slider.value = String(pos);
    buttons.first.disabled = buttons.back.disabled = pos === 0;
    buttons.next.disabled = buttons.last.disabled = pos === n;
    conceal();
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
      var stop = open(pos, pos + 1);
      if (stop !== null) { pause(); ask(stop); return; }
      show(pos + 1);
      if (pos >= n) { pause(); }
    }, 1000 / perSecond);
    play.textContent = "❚❚ pause";
    live.setAttribute("data-tf-playing", "1");
  }
  function go(k) {
    /* forward past an open question stops there and asks it */
    pause();
    if (feedback) { feedback.textContent = ""; feedback.removeAttribute("data-tf-verdict"); }
    var stop = k > pos ? open(pos, Math.min(k, n)) : null;
    if (stop !== null) { ask(stop); } else { show(k); }
  }

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
    if (target === guess && guess) {
      /* typing a value: keep every key from the notebook (a digit, Shift+Enter...), except
         Tab and Escape and the Ctrl/Cmd shortcuts (save, copy, paste) */
      if (event.key === "Enter") { event.preventDefault(); check(); }
      if (!(event.key === "Tab" || event.key === "Escape" || event.ctrlKey || event.metaKey)) {
        event.stopPropagation();
      }
      return;
    }
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
