"""The pipelines: what the commands do, stage by stage, on top of the targets and the core.

Layers (checked by import-linter in the tests, see pyproject.toml): the CLI (edgedeploy.cli)
calls these; these call the targets (edgedeploy.targets, found through entry points) and the
core (model, audit engine, measure, report, artifacts, toolchains, device transports, data);
the core imports no target, no pipeline and no CLI.

  build.py           `edgedeploy build`: every shared stage, the target's convert/simulate/codegen
  measure.py         `edgedeploy measure`: an artifact on a device, before and after
  audit.py           `edgedeploy audit`: chips, rules, `--confirm` with the toolchains
  bench.py           `edgedeploy bench`: this machine's backends, the target-declared ones included
  fix.py             `edgedeploy fix --confirm`: the toolchains' verdicts before and after the rewrites
  supported_ops.py   docs/supported-ops/: the rule tables of every target as Markdown
"""
