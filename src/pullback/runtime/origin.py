"""Whose code a function, a class or an object is: the module that says so.

A ``class`` statement run through ``exec`` with globals lacking ``__name__``
(as ``pullback.testing.function_from_source`` and notebook-like tools do)
makes a class whose ``__module__`` reads ``"builtins"`` (its body's
``__module__ = __name__`` finds the ``builtins`` module's name), so every
check asking "is this a built-in or a library's class?" by module name took
the user's class for a built-in one.  ``module_name`` is the one place those
checks read the module from: ``""`` (no library's) for such a class and its
objects.

>>> ns = {}
>>> exec("class Acc:\\n    pass", ns)
>>> ns["Acc"].__module__, module_name(ns["Acc"]), module_name(ns["Acc"]())
('builtins', '', '')
>>> module_name(int), module_name(len), module_name(type(3.0)), module_name(module_name)
('builtins', 'builtins', 'builtins', 'pullback.runtime.origin')
"""
import builtins

__all__ = ["module_name", "made_by_class_statement"]

_HEAPTYPE = 1 << 9           # Py_TPFLAGS_HEAPTYPE: allocated at run time
_IMMUTABLETYPE = 1 << 8      # Py_TPFLAGS_IMMUTABLETYPE: an extension's heap type (3.10+)


def made_by_class_statement(cls):
    """Whether the class ``cls`` was made by Python code (a ``class``
    statement, ``type(name, bases, ns)``), not by C: a heap type whose
    attributes can be set (an extension module's heap types are immutable)."""
    if not isinstance(cls, type):
        return False
    return bool(cls.__flags__ & _HEAPTYPE) and not cls.__flags__ & _IMMUTABLETYPE


def module_name(obj):
    """``obj.__module__`` (a function's, a class's, an object's class's), ``""``
    where there is none or where it reads ``"builtins"`` for a class made by
    Python code (``exec`` without ``__name__``): the user's, no library's."""
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return ""
    if module == "builtins":
        cls = obj if isinstance(obj, type) else type(obj)
        if made_by_class_statement(cls) and getattr(cls, "__module__", None) == "builtins" \
                and getattr(builtins, cls.__name__, None) is not cls:   # ExceptionGroup
            return ""
    return module
