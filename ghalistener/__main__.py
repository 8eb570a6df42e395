from ghalistener.cli import main

main()
