"""``python -m agen.store.migrations > agen/store/migrations/SHIPPED.txt``: the manifest of shipped migrations.

Run it after adding a migration; the diff must only add lines (tests/unit/test_store_migrations.py checks).
"""

from agen.store.migrate import manifest_lines

print("\n".join(manifest_lines()))
