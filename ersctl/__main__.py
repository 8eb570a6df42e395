from ersctl.cli import main

main()
