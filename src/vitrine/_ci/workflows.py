"""GitHub Actions workflows for the four evaluation layers, rendered for any suite.

Each layer keeps the gate semantics of the pipelines it comes from:

- **offline** (``vitrine --all``): on every push and pull request; a hard gate.
- **behaviour** (the service's behaviour tests): a hard block, started by hand or after every
  successful deploy workflow on the default branch.
- **redteam** (the baseline static cases on their deterministic assertions, then the adaptive
  GOAT and Crescendo attacks, then ``vitrine redteam status`` of each run): a soft gate. A
  compromise fails the job until a person records a sign-off; deployment does not wait on it.
  No model is configured, so the judged assertions are excluded by an explicit flag that
  every report of the run states, and the adaptive attacks use the scripted attacker against
  the scripted target: offline, deterministic, no credentials.
- **rag** (``vitrine rag eval``): ``continue-on-error`` until its thresholds are signed off.

Every layer uploads its JSON and HTML reports as artifacts kept 30 days. The same renderer
writes this project's own workflow files and ``vitrine ci init``'s, so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass

from vitrine.errors import InvalidArgumentError

__all__ = ["LAYERS", "CiSettings", "render_workflows"]

LAYERS = ("offline", "behaviour", "redteam", "rag")
RETENTION_DAYS = 30


@dataclass(frozen=True, slots=True)
class CiSettings:
    """What differs between repositories: the suite, how to install, which deploys to follow.

    ``install`` is a shell command with ``{extras}`` where the layer's vitrine extras go.
    """

    suite: str
    install: str = "pip install -e . 'vitrine[{extras}]'"
    python: str = "3.11"
    deploy_workflow: str = "Deploy Backend"
    ingest_workflow: str = "Ingest Knowledge Base"
    behaviour_tests: str = "tests/behaviour"
    layers: tuple[str, ...] = LAYERS

    def __post_init__(self) -> None:
        unknown = [layer for layer in self.layers if layer not in LAYERS]
        if unknown:
            raise InvalidArgumentError(
                f"unknown layer(s) {unknown}: choose from {', '.join(LAYERS)}"
            )
        if "{extras}" not in self.install:
            raise InvalidArgumentError("the install command needs an {extras} placeholder")
        for name, value in (("suite", self.suite), ("install", self.install)):
            if not value.strip() or any(c in value for c in "\n\r`$"):
                raise InvalidArgumentError(
                    f"{name} must be one plain line without backticks or $: {value!r}"
                )


# vitrine's own extras per layer; the suite's package brings what the suite needs.
_EXTRAS = {
    "offline": "",
    "behaviour": "service,dev",
    "redteam": "",
    "rag": "rag",
}

_SETUP = """\
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "{python}"
          cache: pip
      - name: Install
        run: {install}
"""

_UPLOAD = """\
      - name: Keep the reports
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: {name}
          path: {path}
          retention-days: {retention}
          if-no-files-found: warn
"""

_OFFLINE = """\
name: eval-offline
# The credential-free offline suite: five mandatory gates, one diagnostic, the registered
# controls. A hard gate on every push and pull request.
on:
  push:
  pull_request:
  workflow_dispatch:

permissions:
  contents: read

jobs:
  offline:
    runs-on: ubuntu-latest
    timeout-minutes: 20
{setup}\
      - name: Offline suite (exit 0 pass, 1 fail, 3 not measured, 4 infrastructure)
        run: >-
          vitrine --all --suite {suite} --output .vitrine
          --json-report reports/offline/report.json --html-report reports/offline/report.html
{upload}"""

_AFTER_DEPLOY = """\
  workflow_dispatch:
  workflow_run:
    workflows: ["{workflow}"]
    types: [completed]
    branches: [main]
"""

_ONLY_AFTER_SUCCESS = (
    "    if: github.event_name == 'workflow_dispatch' || "
    "github.event.workflow_run.conclusion == 'success'\n"
)

_BEHAVIOUR = """\
name: eval-behaviour
# Agent behaviour over real SSE sessions. A hard block: any failing test fails the workflow.
# Set the repository variable EVAL_API_URL to test a deployed backend; without it the job
# starts the suite's service on this runner.
on:
{triggers}
permissions:
  contents: read

jobs:
  behaviour:
{condition}\
    runs-on: ubuntu-latest
    timeout-minutes: 30
    env:
      EVAL_API_URL: ${{{{ vars.EVAL_API_URL }}}}
      VITRINE_REQUIRE_SERVICE: "1"
{setup}\
      - name: Start the service unless a deployed one is configured
        if: env.EVAL_API_URL == ''
        run: |
          vitrine serve --suite {suite} --port 8000 --log-file service.log &
          python -m vitrine.service wait http://127.0.0.1:8000 --timeout 120
          echo "EVAL_API_URL=http://127.0.0.1:8000" >> "$GITHUB_ENV"
      - name: Behaviour tests
        run: >-
          python -m pytest {tests} -m "not adversarial"
          --vitrine-report reports/behaviour
{upload}"""

_REDTEAM = """\
name: eval-redteam
# A soft gate. A compromise is a finding: this job stays red until a person reviews it and
# records a sign-off (name and reason) in the run's sealed ledger:
#   download the redteam-reports artifact, then, for the lane (static, goat or crescendo),
#   vitrine redteam sign-off F-<probe id> --by NAME --reason "..." --output <artifact>/<lane>
#   vitrine redteam status --output <artifact>/<lane>      # exit 0 once nothing is open
# Deployment does not depend on this workflow; the sign-off is the record that a human looked.
on:
{triggers}
permissions:
  contents: read

jobs:
  redteam:
{condition}\
    runs-on: ubuntu-latest
    timeout-minutes: 20
{setup}\
      # No judge is configured here, so the judged (llm-rubric) assertions are excluded, and
      # every report of the run says so; without the flag the run is NOT MEASURED (exit 3).
      - name: Baseline static red-team cases (deterministic assertions)
        continue-on-error: true
        run: >-
          vitrine redteam run --deterministic-only --suite {suite}
          --output reports/redteam/static
      # No model is configured here either: the scripted attacker escalates through its
      # authored turns against the scripted target, offline and the same on every run.
      - name: Adaptive GOAT attacks
        continue-on-error: true
        run: >-
          vitrine redteam adaptive --strategy goat --suite {suite}
          --output reports/redteam/goat
      - name: Adaptive Crescendo attacks
        continue-on-error: true
        run: >-
          vitrine redteam adaptive --strategy crescendo --suite {suite}
          --output reports/redteam/crescendo
      - name: Export for review
        if: always()
        run: |
          for lane in static goat crescendo; do
            vitrine redteam export latest --output "reports/redteam/$lane" \\
              --format junit --out "reports/redteam/$lane.xml"
            vitrine redteam export latest --output "reports/redteam/$lane" \\
              --format sarif --out "reports/redteam/$lane.sarif"
          done
      # Exit 1 while a finding has no sign-off, 3 or 4 while a probe is unmeasured.
      - name: Decide the static cases
        if: always()
        run: vitrine redteam status --output reports/redteam/static
      - name: Decide the GOAT attacks
        if: always()
        run: vitrine redteam status --output reports/redteam/goat
      - name: Decide the Crescendo attacks
        if: always()
        run: vitrine redteam status --output reports/redteam/crescendo
{upload}"""

_RAG = """\
name: eval-rag
# Retrieval quality against the ground-truth dataset. A soft block (continue-on-error) until
# its thresholds are signed off; then remove continue-on-error to make it a hard block.
on:
{triggers}
permissions:
  contents: read

jobs:
  rag:
{condition}\
    runs-on: ubuntu-latest
    timeout-minutes: 30
    continue-on-error: true
{setup}\
      - name: RAG evaluation
        run: >-
          vitrine rag eval --suite {suite} --output .vitrine
          --json-report reports/rag/report.json --html-report reports/rag/report.html
{upload}"""


def render_workflows(settings: CiSettings) -> dict[str, str]:
    """File name -> YAML text, one workflow per selected layer."""
    out: dict[str, str] = {}
    for layer in settings.layers:
        setup = _SETUP.format(
            python=settings.python,
            install=settings.install.format(extras=_EXTRAS[layer]).replace("[]", ""),
        )
        upload = _UPLOAD.format(
            name=f"{layer}-reports", path=f"reports/{layer}/", retention=RETENTION_DAYS
        )
        if layer == "offline":
            text = _OFFLINE.format(setup=setup, suite=settings.suite, upload=upload)
        else:
            workflow = settings.ingest_workflow if layer == "rag" else settings.deploy_workflow
            template = {"behaviour": _BEHAVIOUR, "redteam": _REDTEAM, "rag": _RAG}[layer]
            text = template.format(
                triggers=_AFTER_DEPLOY.format(workflow=workflow),
                condition=_ONLY_AFTER_SUCCESS,
                setup=setup,
                suite=settings.suite,
                tests=settings.behaviour_tests,
                upload=upload,
            )
        out[f"eval-{layer}.yml"] = text
    return out
