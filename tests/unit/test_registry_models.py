"""The registry names each RPC's models once, in the annotation mypy checks callers against; the
runtime reads that annotation's text to import the models on first use. Both readings must give the
same classes, and the variable's name is the RPC's name."""

from __future__ import annotations

import inspect
import textwrap
import typing
from typing import Any

from agen.api import registry


def _annotation_namespace() -> dict[str, Any]:
    """The registry's `if TYPE_CHECKING:` imports, run for real."""
    source = inspect.getsource(registry)
    block = source.split("if TYPE_CHECKING:\n", 1)[1].split("\n\n", 1)[0]
    namespace: dict[str, Any] = {**vars(registry)}
    exec(textwrap.dedent(block), namespace)
    return namespace


def test_every_rpcs_annotation_names_the_models_it_imports() -> None:
    namespace = _annotation_namespace()
    hints = typing.get_type_hints(registry, globalns=namespace)
    named = {n: r for n, r in vars(registry).items() if isinstance(r, registry.Rpc)}
    assert len(named) == len(registry.RPCS)
    for name, rpc in named.items():
        assert name in hints, f"{name} has no Rpc[Request, Response] annotation"
        assert typing.get_args(hints[name]) == (rpc.request, rpc.response), name
        assert rpc.name == name and rpc.path == f"/v1/{name}"


def test_an_rpc_annotated_otherwise_is_refused_at_import() -> None:
    import pytest

    namespace: dict[str, Any] = {
        "__annotations__": {"Odd": "Rpc[Request, Response]"},
        "Odd": registry._rpc("viewer", "m:f", "doc"),
    }
    with pytest.raises(TypeError, match=r"Odd: annotate it as Rpc\[wire_module.Request"):
        registry._named(namespace)


def test_importing_the_registry_imports_no_wire_module_beyond_what_it_needs() -> None:
    import subprocess
    import sys

    code = (
        "import sys, agen.api.registry as r; "
        "print(sorted(m for m in sys.modules if m.startswith('agen.wire.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
