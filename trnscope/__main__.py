from trnscope.cli import run

run()
