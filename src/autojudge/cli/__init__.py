"""The ``autojudge`` command line: one module per command group, assembled in ``cli.app``.

The top layer: may import everything; nothing in the library imports it.
"""
