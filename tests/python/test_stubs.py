"""The stubs (PY-020) match the compiled module: every public symbol of frame._frame is in
frame/_frame.pyi with the same parameters (names, order, which have defaults), every stub
symbol exists, and the package's __all__ resolves. pybind11 writes each signature as the
first docstring line, which is what is compared."""

from __future__ import annotations

import ast
import inspect
import os
import re

import frame
import frame._frame as ext

STUB = os.path.join(os.path.dirname(frame.__file__), "_frame.pyi")


def _split_params(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[(" :
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def runtime_params(obj, name: str) -> list[tuple[str, bool]]:
    """(name, has_default) per parameter, from pybind11's 'name(a: T, b: U = x) -> R' line."""
    doc = (obj.__doc__ or "").strip().splitlines()[0]
    m = re.match(re.escape(name) + r"\((.*)\) ->", doc)
    assert m, f"no pybind11 signature for {name}: {doc!r}"
    params = []
    for p in _split_params(m.group(1)):
        pname = p.split(":")[0].strip()
        params.append((pname, "=" in p))
    return params


def stub_params(fn: ast.FunctionDef) -> list[tuple[str, bool]]:
    args = fn.args.args
    defaults = [False] * (len(args) - len(fn.args.defaults)) + [True] * len(fn.args.defaults)
    params = [(a.arg, d) for a, d in zip(args, defaults)]
    if fn.args.kwonlyargs:  # pybind11 writes py::kw_only() as a bare "*"
        params.append(("*", False))
        params += [(a.arg, d is not None) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults)]
    return params


def load_stub():
    tree = ast.parse(open(STUB).read())
    funcs, classes, names = {}, {}, set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            funcs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            members = {}
            for m in node.body:
                if isinstance(m, ast.FunctionDef):
                    # A property's setter follows its getter: keep the @property getter.
                    setter = any(isinstance(d, ast.Attribute) and d.attr == "setter"
                                 for d in m.decorator_list)
                    if not (setter and m.name in members):
                        members[m.name] = m
                elif isinstance(m, ast.AnnAssign):
                    members[m.target.id] = m
            classes[node.name] = members
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets)
    return funcs, classes, names


def public_module_symbols():
    return {n: getattr(ext, n) for n in dir(ext)
            if not (n.startswith("__") and n != "__version__") and n not in ("annotations",)}


def test_every_module_symbol_is_in_the_stub_with_its_signature():
    funcs, classes, names = load_stub()
    for name, obj in public_module_symbols().items():
        if inspect.isclass(obj):
            assert name in classes, f"class {name} missing from {STUB}"
            members = classes[name]
            for mname, member in vars(obj).items():
                if mname.startswith("_") and mname != "__init__":
                    continue
                if mname == "__init__" and "pybind11_object" in repr(member):
                    continue
                if mname == "__init__" and not hasattr(member, "__doc__"):
                    continue
                if mname == "__init__" and (member.__doc__ or "").startswith("Initialize self"):
                    assert "__init__" not in members, f"{name} is not constructible from Python"
                    continue
                assert mname in members, f"{name}.{mname} missing from the stub"
                stub = members[mname]
                if isinstance(member, property):
                    is_prop = isinstance(stub, ast.AnnAssign) or any(
                        isinstance(d, ast.Name) and d.id == "property" for d in stub.decorator_list)
                    assert is_prop, f"{name}.{mname} is a property"
                    if member.fset is None:
                        assert not isinstance(stub, ast.AnnAssign), f"{name}.{mname} is read-only"
                    continue
                assert isinstance(stub, ast.FunctionDef), f"{name}.{mname} is a method"
                assert stub_params(stub) == runtime_params(member, mname), f"{name}.{mname}"
        elif callable(obj):
            assert name in funcs, f"function {name} missing from the stub"
            assert stub_params(funcs[name]) == runtime_params(obj, name), name
        else:
            assert name in names, f"attribute {name} missing from the stub"


def test_no_stub_symbol_is_missing_from_the_module():
    funcs, classes, names = load_stub()
    for name in list(funcs) + list(classes):
        assert hasattr(ext, name), f"stub declares {name}, the module has none"
    for cname, members in classes.items():
        for mname in members:
            assert hasattr(getattr(ext, cname), mname), f"stub declares {cname}.{mname}"


def test_package_all_resolves_and_is_typed():
    for name in frame.__all__:
        assert hasattr(frame, name), name
    pkg = os.path.dirname(frame.__file__)
    assert os.path.exists(os.path.join(pkg, "py.typed"))
