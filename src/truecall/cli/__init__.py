"""The ``truecall`` command: ``serve`` (``serving``: no CLI framework loaded), its ``--workers``
supervisor (``_workers``, ``_worker_process``) and the other commands (``_commands``, typer),
which are loaded only when run: importing this package loads none of them."""

from .._aliases import forward as _forward

__all__: list[str] = []

#: ``truecall.cli`` was the typer module: ``truecall.cli.app`` / ``.main`` still load it (with a warning).
__getattr__ = _forward(__name__, "truecall.cli._commands", __all__)
