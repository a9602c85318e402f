from edgedeploy.cli import main

main()
