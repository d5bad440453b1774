"""Replay and eval: run a bundle offline against scripted or recorded models with mocked tools.

``scenario`` is the file format, ``mocks`` the tools that answer from it, ``engine`` runs one
scenario once in a scratch store and checks its expectations, ``suite`` runs many K times,
``replay`` turns a recorded run into a scenario and diffs a re-run against it.
"""
