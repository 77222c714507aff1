"""The optional dependencies, the extras that install them, and a module imported on first use.

The core of ssl-opt (the estimators, the fast solvers, certificates on residuals) needs numpy,
scipy, scikit-learn, pluggy, qdldl, threadpoolctl, tqdm and platformdirs. Three groups of
packages are extras (``pip install "ssl-opt[reference,dask,plot]"``, or ``[all]``):

==============  ==============================  ============================================
extra           packages                        what needs them
==============  ==============================  ============================================
``reference``   cvxpy, clarabel, osqp, scs      the exact CVXPY programs: ``backend=
                                                "reference"``, a certificate's gap to the
                                                optimum, ``ssl-opt certify``, ``ssl-opt bench``
``dask``        dask[array], distributed        the distributed operators, ``client=``
``plot``        matplotlib                      ``History.plot``, the bench figures
==============  ==============================  ============================================

:data:`cvxpy` stands for the ``cvxpy`` module and imports it at its first attribute access, so
``import ssl_opt`` and a fit of a fast solver never import CVXPY (the extra is 224 MB of the
536 MB of ``[reference]``, ``benchmarks/install_size.sh``). A solver that needs a package
declares it (``Solver.needs_packages``); where the package is missing, :meth:`Solver.missing
<ssl_opt.solvers.Solver.missing>` says so with the install command, so ``backend="auto"``
passes it over and an explicit request explains.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Iterable
from types import ModuleType

from ssl_opt.exceptions import MissingDependencyError

#: The extra that installs each optional top-level package.
EXTRA_OF: dict[str, str] = {
    "cvxpy": "reference",
    "clarabel": "reference",
    "osqp": "reference",
    "scs": "reference",
    "dask": "dask",
    "distributed": "dask",
    "matplotlib": "plot",
}


def install_hint(package: str) -> str:
    """The command that installs ``package`` with ssl-opt."""
    extra = EXTRA_OF.get(package.split(".")[0])
    return (f"pip install 'ssl-opt[{extra}]'" if extra is not None
            else f"pip install {package.split('.')[0]}")


@functools.cache
def installed(package: str) -> bool:
    """Whether ``package`` can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def require(package: str, purpose: str) -> ModuleType:
    """``import package``, or a :class:`MissingDependencyError` saying that ``purpose`` needs
    it and how to install it."""
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as exc:
        if exc.name is None or package.split(".")[0] != exc.name.split(".")[0]:
            raise  # the package is there but something it imports is not
        raise MissingDependencyError(
            f"{purpose} needs {package.split('.')[0]}, which is not installed: "
            f"{install_hint(package)}") from exc


def missing_reasons(packages: Iterable[str]) -> list[str]:
    """One reason per package of ``packages`` that is not installed (empty when all are)."""
    return [f"{p} (not installed: {install_hint(p)})" for p in packages if not installed(p)]


class LazyModule(ModuleType):
    """A module imported at the first access to one of its attributes (then cached)."""

    def __init__(self, package: str, purpose: str):
        super().__init__(package)
        self._purpose = purpose
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str):
        if attribute.startswith("__") or attribute in ("_purpose", "_module"):
            raise AttributeError(attribute)
        if self._module is None:
            self._module = require(self.__name__, self._purpose)
        return getattr(self._module, attribute)


#: ``cvxpy``, imported when the first CVXPY program is built.
cvxpy = LazyModule("cvxpy", "the exact CVXPY reference (backend='reference', certify)")
