"""The one compiled part: ``truecall.judge._speedups`` (the claim judgment's quick path in C).

Optional: where no C compiler is found the build goes on without it, and ``truecall.judge._claims``
runs the same judgment in Python (slower, the same answers).  Everything else is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("truecall.judge._speedups", ["src/truecall/judge/_speedups.c"], optional=True)])
