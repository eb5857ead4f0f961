"""Every figure the pages quote, written from the committed files.

A page holds generated blocks between markers::

    <!-- generated: NAME ARGS -->
    ...written by the block NAME from the committed files named by ARGS...
    <!-- end: NAME -->

``python -m docs.generate`` rewrites every block of README.md, docs/*.md and results/**/README.md (and the
three pairs' figure, results/pairs/); ``python -m docs.generate --check`` writes nothing and exits 1 naming
every block that differs from what its files give now, and every figure a page cites from a file (a link
``[56.3%](metrics/arith/mining.json "important_fraction")``) that the file does not hold.
tests/test_docs.py runs the check. The blocks: docs/development.md#generated-figures.
"""
