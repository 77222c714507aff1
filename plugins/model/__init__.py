"""Generic solvers of :class:`~ssl_opt.modeling.Model` compositions, chosen from the
capabilities their terms declare (docs/design.md §6, docs/modeling.md)."""
