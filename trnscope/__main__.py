from trnscope.cli.main import run

run()
