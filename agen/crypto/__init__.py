"""Keys, certificates and sealed values: the small pieces of cryptography agen's layers share.

``pem`` (PEM text of the keys and certificates agen makes), ``cahash`` (the Hub CA's pinned hash),
``sealing`` (AES-256-GCM sealing of secrets at rest), ``keyprint`` (a short fingerprint of an API
key). ``cryptography`` is imported inside the functions that need it.
"""
