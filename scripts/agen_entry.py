"""PyInstaller entry point: the single-file binary runs the same CLI as the package."""

from agen.cli import main

if __name__ == "__main__":
    main()
