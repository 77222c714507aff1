"""Fast solvers from the papers, installed as ``ssl_opt.plugins``: one sub-package per problem
family, one module per solver (a pluggy plugin registered in process from
:data:`ssl_opt.registry.BUILTIN_PLUGINS`), plus the family's solver-private helpers."""
