"""`python -m edgedeploy`, and the `edgedeploy` console script (`run`, pyproject.toml)."""


def run() -> None:
    # The signal handlers first, before click, onnx, numpy and ONNX Runtime are imported (the
    # first half second of a build): from here on Ctrl-C, SIGTERM and SIGHUP stop the command
    # with one sentence and exit 130 (edgedeploy.interrupts), also while a module is imported.
    from edgedeploy import interrupts

    try:
        interrupts.install()
        from edgedeploy.cli import main
    except (KeyboardInterrupt, interrupts.Interrupted):
        interrupts.exit_interrupted()
    main()


if __name__ == "__main__":
    run()
