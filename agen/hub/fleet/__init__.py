"""The fleet as the Hub sees it: Nests and their instances, assignments (``instances``), and enrolling a
Nest (``enrol``: join tokens, its credential and certificate). A bundle's stored definition is
agen.hub.definitions; a Nest's client certificates are agen.hub.nest_certs (auth reads them too)."""
