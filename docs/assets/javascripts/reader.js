// What Material's own scripts get wrong for keyboard and screen-reader users, put right as they go.
// - A code block that scrolls sideways needs a tab stop, or a keyboard cannot scroll it. The build
//   gives every code block one; Material takes it away wherever the screen has no hover pointer
//   (a tablet with a keyboard, say). Put it back.
// - Material wraps each code block's copy button in a <nav>, so a page had many navigation
//   landmarks without a name. One button is not a landmark.
(function () {
  function fix(el) {
    if (el.matches("pre:not(.mermaid) > code") && !el.hasAttribute("tabindex")) {
      el.setAttribute("tabindex", "0");
    }
    if (el.matches("nav.md-code__nav") && el.getAttribute("role") !== "none") {
      el.setAttribute("role", "none");
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
          node.querySelectorAll("pre > code, nav.md-code__nav").forEach(fix);
        }
      });
    });
  }).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ["tabindex"]});
})();
