"""The glue between example scripts, their stored outputs and the pages that show them.

Pages call `show`, `show_quote`, `show_tabs`, `show_plot` or `show_reproduction` from markdown-exec blocks;
everything else here serves the build hook, the tests and `nox -s record`.
"""

from execdocs.plots import show_plot
from execdocs.render import show, show_quote, show_tabs
from execdocs.reproduction_tables import show_reproduction

__all__ = ["show", "show_plot", "show_quote", "show_reproduction", "show_tabs"]
