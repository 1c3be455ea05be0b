"""The glue between example scripts, their stored outputs and the pages that show them.

Pages call `show` from markdown-exec blocks; everything else here serves the build hook,
the tests and `nox -s record`.
"""

from execdocs.render import show, show_tabs

__all__ = ["show", "show_tabs"]
