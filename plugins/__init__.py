"""Fast solvers from the papers, installed as ``ssl_opt.plugins``; each module is a plugin
registered through the ``ssl_opt`` entry-point group, like a third-party one."""
