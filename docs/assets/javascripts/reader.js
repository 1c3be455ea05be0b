// What Material's own scripts get wrong for keyboard and screen-reader users, put right as they go.
// - A code block that scrolls sideways needs a tab stop, or a keyboard cannot scroll it. The build
//   gives every code block one; Material takes it away wherever the screen has no hover pointer
//   (a tablet with a keyboard, say). Put it back.
// - Material wraps each code block's copy button in a <nav>, so a page had many navigation
//   landmarks without a name. One button is not a landmark.
// - A table wider than the column scrolls sideways inside Material's wrapper, which has no tab stop
//   either (in a phone's window most tables of numbers scroll). The wrapper gets one while it scrolls.
(function () {
  var tables = new ResizeObserver(function (entries) {
    entries.forEach(function (entry) {
      var wrapper = entry.target.closest(".md-typeset__scrollwrap");
      var scrolls = wrapper.scrollWidth > wrapper.clientWidth;
      if (scrolls && !wrapper.hasAttribute("tabindex")) {
        wrapper.setAttribute("tabindex", "0");
      } else if (!scrolls && wrapper.hasAttribute("tabindex")) {
        wrapper.removeAttribute("tabindex");
      }
    });
  });
  var watched = new WeakSet();

  function fix(el) {
    if (el.matches("pre > code") && !el.hasAttribute("tabindex")) {
      el.setAttribute("tabindex", "0");
    }
    if (el.matches("nav.md-code__nav") && el.getAttribute("role") !== "none") {
      el.setAttribute("role", "none");
    }
    if (el.matches(".md-typeset__scrollwrap") && !watched.has(el)) {
      watched.add(el);  // the wrapper resizes with the window, the table with its content
      tables.observe(el);
      Array.from(el.children).forEach(function (table) { tables.observe(table); });
    }
  }

  new MutationObserver(function (records) {
    records.forEach(function (record) {
      if (record.type === "attributes") {
        fix(record.target);
      }
      record.addedNodes.forEach(function (node) {
        if (node.nodeType === Node.ELEMENT_NODE) {
          fix(node);
          node.querySelectorAll("pre > code, nav.md-code__nav, .md-typeset__scrollwrap").forEach(fix);
        }
      });
    });
  }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ["tabindex"]});
  document.querySelectorAll(".md-typeset__scrollwrap").forEach(fix);  // wrapped before this script ran
})();
