/* Provenance highlighting for one TenFlang output (the element with class tf-root that holds
   this script). Elements say what they stand for with data attributes:
     data-tf-line="9"        a shape-program line (a GCP line: the line it derives from)
     data-tf-lines="4 9"     a graph node / order entry: the lines that declare and define it
     data-tf-node="z"        a graph node / order entry for variable z
     data-tf-nodes="z"       a shape line: the variables it declares or defines
   Hovering any of them lights up everything that shares a line or a variable with it. One
   delegated listener per output, so a 5000-line GCP costs nothing until hovered. */
(function (root) {
  if (!root || root.getAttribute("data-tf-bound")) { return; }
  root.setAttribute("data-tf-bound", "1");
  var lit = [];
  var WATCHED = "[data-tf-line],[data-tf-lines],[data-tf-node],[data-tf-nodes]";

  function words(el, attr) {
    var v = el.getAttribute(attr);
    return v ? v.split(" ").filter(function (w) { return w.length > 0; }) : [];
  }
  function clear() {
    lit.forEach(function (el) { el.classList.remove("tf-hl"); });
    lit = [];
  }
  function selectors(el) {
    var sels = [];
    var lines = words(el, "data-tf-lines").concat(words(el, "data-tf-line"));
    var nodes = words(el, "data-tf-nodes").concat(words(el, "data-tf-node"));
    lines.forEach(function (l) {
      if (l === "0") { return; }  /* the GCP header derives from no line */
      sels.push('[data-tf-line="' + l + '"]', '[data-tf-lines~="' + l + '"]');
    });
    nodes.forEach(function (n) {
      sels.push('[data-tf-node="' + n + '"]', '[data-tf-nodes~="' + n + '"]');
    });
    return sels;
  }
  function reveal(source) {
    /* scroll each code pane (not the page) so its lit lines are in view. A shape line lights
       its forward copy near the top of the GCP and its backward block far below: when both
       do not fit, the backward block (what the line became) is the one brought into view. */
    root.querySelectorAll(".tf-scroll").forEach(function (pane) {
      if (pane.contains(source)) { return; }
      var shown = pane.querySelectorAll(".tf-hl");
      if (shown.length === 0) { return; }
      var box = pane.getBoundingClientRect();
      function top(el) { return el.getBoundingClientRect().top - box.top + pane.scrollTop; }
      function bottom(el) { return top(el) + el.getBoundingClientRect().height; }
      var from = top(shown[0]);
      var to = bottom(shown[shown.length - 1]);
      var block = pane.querySelector('.tf-hl[data-tf-section="backward"]');
      if (to - from > pane.clientHeight - 40 && block) {
        from = top(block);
      }
      var visible = from >= pane.scrollTop && Math.min(to, from + pane.clientHeight - 40) <=
        pane.scrollTop + pane.clientHeight;
      if (!visible) { pane.scrollTop = Math.max(0, from - 40); }
    });
  }
  function light(el) {
    clear();
    if (!el || !root.contains(el)) { return; }
    var sels = selectors(el);
    if (sels.length === 0) { return; }
    root.querySelectorAll(sels.join(",")).forEach(function (m) {
      m.classList.add("tf-hl");
      lit.push(m);
    });
    reveal(el);
  }
  root.addEventListener("mouseover", function (event) {
    light(event.target.closest ? event.target.closest(WATCHED) : null);
  });
  root.addEventListener("mouseleave", function () { if (!kbd) { clear(); } });

  /* The keyboard does what hovering does (WCAG 2.1.1): in a focused pane (a listing, the
     order) the up and down arrows, Home and End move to a line and light what it stands
     for; a status line tells a screen reader which line and how much lit up; Escape or
     leaving the pane clears it. The listener sits on the window, on the way down, as the
     stepper's does: JupyterLab would otherwise take the arrows to move between cells. */
  var kbd = null;
  var status = document.createElement("span");
  status.className = "tf-sr";
  status.setAttribute("role", "status");
  root.appendChild(status);
  root.querySelectorAll(".tf-scroll").forEach(function (pane) {
    if (pane.querySelector(WATCHED)) {
      pane.setAttribute("aria-keyshortcuts", "ArrowUp ArrowDown Home End Escape");
    }
  });
  function leave() {
    if (kbd) { kbd.classList.remove("tf-kbd"); kbd = null; }
    clear();
  }
  function moveTo(pane, el) {
    if (kbd) { kbd.classList.remove("tf-kbd"); }
    kbd = el;
    el.classList.add("tf-kbd");
    light(el);
    var box = pane.getBoundingClientRect(), r = el.getBoundingClientRect();
    if (r.top < box.top || r.bottom > box.bottom) {
      pane.scrollTop += r.top - box.top - pane.clientHeight / 3;
    }
    var others = lit.filter(function (m) { return m !== el; }).length;
    status.textContent = el.textContent.replace(/\s+/g, " ").trim() + ": " + others +
      " related " + (others === 1 ? "line or node" : "lines and nodes") + " highlighted";
  }
  function onKey(event) {
    if (!root.isConnected) { window.removeEventListener("keydown", onKey, true); return; }
    var pane = event.target;
    if (!(pane instanceof Element) || !pane.classList.contains("tf-scroll") ||
        !root.contains(pane) || event.altKey || event.ctrlKey || event.metaKey) { return; }
    var items = [].slice.call(pane.querySelectorAll(WATCHED));
    if (items.length === 0) { return; }
    if (event.key === "Escape") { leave(); return; }
    var at = kbd && pane.contains(kbd) ? items.indexOf(kbd) : -1;
    var to = null;
    if (event.key === "ArrowDown") { to = Math.min(items.length - 1, at + 1); }
    else if (event.key === "ArrowUp") { to = at < 0 ? 0 : Math.max(0, at - 1); }
    else if (event.key === "Home") { to = 0; }
    else if (event.key === "End") { to = items.length - 1; }
    if (to === null) { return; }
    event.stopPropagation();
    event.preventDefault();
    moveTo(pane, items[to]);
  }
  window.addEventListener("keydown", onKey, true);
  root.addEventListener("focusout", function (event) {
    if (kbd && !(event.relatedTarget && kbd.closest(".tf-scroll").contains(event.relatedTarget))) {
      leave();
    }
  });
})((function () {
  var script = document.currentScript;
  return (script && script.closest(".tf-root")) || document.getElementById("__TF_PREFIX__");
})());
