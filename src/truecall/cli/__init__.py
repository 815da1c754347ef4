"""The ``truecall`` command: ``serve`` (``serving``: no CLI framework loaded), its ``--workers``
supervisor (``_workers``, ``_worker_process``) and the other commands (``_commands``, typer),
which are loaded only when run: importing this package loads none of them."""
