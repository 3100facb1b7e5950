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
  root.addEventListener("mouseover", function (event) {
    var el = event.target.closest ? event.target.closest(WATCHED) : null;
    clear();
    if (!el || !root.contains(el)) { return; }
    var sels = selectors(el);
    if (sels.length === 0) { return; }
    root.querySelectorAll(sels.join(",")).forEach(function (m) {
      m.classList.add("tf-hl");
      lit.push(m);
    });
    reveal(el);
  });
  root.addEventListener("mouseleave", clear);
})((function () {
  var script = document.currentScript;
  return (script && script.closest(".tf-root")) || document.getElementById("__TF_PREFIX__");
})());
