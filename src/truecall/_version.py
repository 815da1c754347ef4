"""The one version string: the package's (pyproject.toml reads it), ``truecall.__version__`` and
``truecall --version``."""

__version__ = "0.1.0"
