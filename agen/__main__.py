from agen.cli import main

main()
