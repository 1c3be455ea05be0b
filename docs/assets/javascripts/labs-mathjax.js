// MathJax for the lab pages, from the site itself (vendored by execdocs/vendor.py): mkdocs-jupyter's
// page template loads this file where it would load MathJax from a CDN (`custom_mathjax_url`).
// It configures MathJax 3 for the delimiters notebooks use, then loads it once; under Material's
// instant navigation a later lab page only asks the loaded MathJax to typeset the new content.
(function () {
  var mathjaxUrl = new URL("../vendor/mathjax/tex-svg-full.js", document.currentScript.src).href;

  function typeset() {
    // Only a page whose text cells hold TeX needs MathJax (2 MB): look for its delimiters first.
    var text = Array.from(document.querySelectorAll(".jp-MarkdownCell"))
      .map(function (cell) { return cell.textContent; })
      .join("\n");
    if (!/\$|\\\(|\\\[/.test(text)) {
      return;
    }
    if (window.MathJax && window.MathJax.typesetPromise) {
      window.MathJax.typesetPromise();
      return;
    }
    window.MathJax = {
      tex: {inlineMath: [["$", "$"], ["\\(", "\\)"]], displayMath: [["$$", "$$"], ["\\[", "\\]"]], processEscapes: true},
      options: {ignoreHtmlClass: "jp-CodeCell|highlight-ipynb"},
    };
    var script = document.createElement("script");
    script.src = mathjaxUrl;
    script.async = true;
    document.head.appendChild(script);
  }

  // The template puts this script above the cells: wait for them.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", typeset);
  } else {
    typeset();
  }
})();
