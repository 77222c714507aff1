"""Where cost models live: shipped defaults, overridden by the user's own calibration.

``ssl-opt calibrate`` writes ``cost_models.json`` into the user cache directory
(``platformdirs.user_cache_dir("ssl_opt")``, or ``$SSL_OPT_CACHE_DIR``) by writing a temporary
file beside it and renaming it over the old one, so a reader never sees half a file. A file
that cannot be parsed, or that was written by another format or package version, is ignored
with a warning, and the models shipped with the package are used instead.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import warnings
from datetime import datetime, timezone
from pathlib import Path

from ssl_opt.selection.cost_model import CostModel

FORMAT = 1
FILENAME = "cost_models.json"
CACHE_ENV = "SSL_OPT_CACHE_DIR"

_loaded: dict | None = None


class CostModelWarning(UserWarning):
    """A cost-model file was ignored (corrupt, or stale), or one of its models was (absurd
    laws: negative, NaN, astronomically large, or an implausible exponent)."""


def shipped_models_path() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / FILENAME


def user_models_path() -> Path:
    root = os.environ.get(CACHE_ENV)
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("ssl_opt")
    return Path(root) / FILENAME


def _package_version() -> str:
    from ssl_opt import __version__

    return __version__


def machine_description() -> dict:
    import numpy as np
    import scipy

    return {"python": platform.python_version(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "numpy": np.__version__, "scipy": scipy.__version__}


def save_models(models, path: Path | str | None = None, seconds: float | None = None) -> Path:
    """Write ``models`` (CostModel iterable) atomically; returns the path written."""
    path = Path(path) if path is not None else user_models_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "format": FORMAT,
        "package_version": _package_version(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_description(),
        "calibration_seconds": seconds,
        "models": [m.to_json() for m in sorted(models, key=lambda m: (m.key, m.solver))],
    }
    fd, tmp = tempfile.mkstemp(prefix=".cost_models.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_models(path: Path | str) -> dict[tuple[str, str], CostModel] | None:
    """The models in ``path`` by ``(solver, key)``; None (with a warning) if the file is
    corrupt or stale, None silently if it does not exist. A model whose laws are absurd
    (:meth:`CostModel.implausible`) is left out with a warning; the others are kept."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        if doc.get("format") != FORMAT:
            warnings.warn(f"ignoring cost models in {path}: format {doc.get('format')!r}, this "
                          f"ssl_opt reads format {FORMAT}; re-run `ssl-opt calibrate`.",
                          CostModelWarning, stacklevel=3)
            return None
        if doc.get("package_version") != _package_version():
            warnings.warn(f"ignoring stale cost models in {path}: measured with ssl_opt "
                          f"{doc.get('package_version')}, this is {_package_version()}; re-run "
                          "`ssl-opt calibrate`.", CostModelWarning, stacklevel=3)
            return None
        if not isinstance(doc["models"], list):
            raise TypeError(f"'models' must be a list, got {type(doc['models']).__name__}")
        models = [CostModel.from_json(m) for m in doc["models"]]
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        warnings.warn(f"ignoring corrupt cost-model file {path} ({type(exc).__name__}: {exc}); "
                      "re-run `ssl-opt calibrate`.", CostModelWarning, stacklevel=3)
        return None
    usable = {}
    for m in models:
        reasons = m.implausible()
        if reasons:
            warnings.warn(f"ignoring the cost model of {m.solver!r} on {m.key!r} in {path}: "
                          f"{'; '.join(reasons)}; re-run `ssl-opt calibrate`.",
                          CostModelWarning, stacklevel=3)
        else:
            usable[(m.solver, m.key)] = m
    return usable


def load_models() -> dict[tuple[str, str], tuple[CostModel, str]]:
    """Every usable model with where it came from (``"calibrated"`` or ``"shipped"``); the
    user's calibration wins over the shipped default for the same (solver, key)."""
    global _loaded
    if _loaded is None:
        found: dict = {}
        for source, path in (("shipped", shipped_models_path()),
                             ("calibrated", user_models_path())):
            models = read_models(path) or {}
            found.update({k: (m, source) for k, m in models.items()})
        _loaded = found
    return _loaded


def clear_cache() -> None:
    """Forget the loaded models (after a calibration, or in tests)."""
    global _loaded
    _loaded = None
