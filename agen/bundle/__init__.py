"""Bundles: the folder that defines an agent (seed 000 §9), its models, loader and digest."""

from agen.bundle.digest import definition_id, digest_dir, digest_files, walk_bundle
from agen.bundle.loader import Bundle, Skill, load_bundle, load_bundle_files, validate_bundle

__all__ = [
    "Bundle",
    "Skill",
    "definition_id",
    "digest_dir",
    "digest_files",
    "load_bundle",
    "load_bundle_files",
    "validate_bundle",
    "walk_bundle",
]
