from loopcheck.cli import main

main()
