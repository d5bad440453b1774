"""The Hub CA's hash: ``sha256:<hex of the certificate's DER>``, printed by `agen hub serve --tls` and
`agen join-token create`, pinned by clients with ``--ca-hash`` / ``AGEN_CA_HASH`` (stdlib only)."""

from __future__ import annotations

import hashlib
import re
import ssl

from agen.errors import InvalidError

CA_HASH_ENV = "AGEN_CA_HASH"
_CA_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")


def ca_hash_of(pem: str) -> str:
    """``sha256:<hex>`` of a certificate's DER: what `agen hub serve --tls` prints and clients pin."""
    return "sha256:" + hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()


def check_ca_hash(value: str, where: str) -> str:
    if not _CA_HASH.fullmatch(value.strip().lower()):
        raise InvalidError(
            f"{where} {value[:80]!r} is not a CA hash; use the sha256:<64 hex digits> that "
            "`agen hub serve --tls` and `agen join-token create` print",
            field=where,
        )
    return value.strip().lower()
