"""``python -m sqlstream.cli``: the ``sqlstream`` command (:func:`sqlstream.cli.main`)."""

from sqlstream.cli import main

main()
