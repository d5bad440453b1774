"""The Hub's API: RPCs declared once (registry), served over HTTP (app) and in-process (client)."""
