from trnscope.console import main

main()
