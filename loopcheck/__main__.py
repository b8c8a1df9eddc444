from loopcheck.cli.commands import main

main()
