"""Package namespaces that load their modules on first use (PEP 562)."""

import importlib

__all__ = ["lazy_namespace"]


def lazy_namespace(package, where):
    """``__getattr__`` and ``__dir__`` for ``package`` (its ``__name__``) whose names ``where``
    maps to the relative module defining each; a name loads its module when first asked for."""

    def __getattr__(name):
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module, package), name)
        vars(importlib.import_module(package))[name] = value
        return value

    def __dir__():
        return sorted(set(vars(importlib.import_module(package))) | set(where))

    return __getattr__, __dir__
