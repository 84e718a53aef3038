"""Exports of a red-team run for other tools: JSON, JUnit XML for CI, SARIF 2.1.0 for findings.

JUnit: one test case per probe or case; a compromise is a ``failure``, an inconclusive probe is
``skipped`` (not measured), an errored probe is an ``error``. SARIF: one result per finding,
with the OWASP id as the rule and the sign-off, when there is one, as a suppression, so code
scanning dashboards show open findings and accepted ones apart.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from vitrine.redteam._model import OWASP_TITLES
from vitrine.redteam._runs import SignOff, finding_states

__all__ = ["EXPORT_FORMATS", "export_run"]

ExportFormat = Literal["json", "junit", "sarif"]
EXPORT_FORMATS: tuple[str, ...] = ("json", "junit", "sarif")
_SARIF_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def export_run(document: Mapping[str, Any], signoffs: Sequence[SignOff], fmt: ExportFormat) -> str:
    if fmt == "json":
        body = {**document, "findings": finding_states(document, signoffs)}
        return json.dumps(body, ensure_ascii=False, indent=2) + "\n"
    if fmt == "junit":
        return _junit(document)
    return _sarif(document, signoffs)


def _junit(document: Mapping[str, Any]) -> str:
    probes = list(document.get("probes") or ())
    scores = document.get("scores") or {}
    suites = ET.Element("testsuites", name=f"vitrine red team {document.get('run_id', '')}")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=str(document.get("kind", "redteam")),
        tests=str(len(probes)),
        failures=str(scores.get("compromised", 0)),
        errors=str(scores.get("errored", 0)),
        skipped=str(sum(1 for p in probes if p["outcome"] == "inconclusive" and not p["error"])),
    )
    for probe in probes:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"redteam.{probe['attack_id']}",
            name=str(probe["probe_id"]),
        )
        label = f"{probe['owasp']} {probe['severity']}: {probe['diagnostic']}"
        if probe["outcome"] == "compromised":
            ET.SubElement(case, "failure", message=label, type="compromised")
        elif probe["error"]:
            error = probe["error"]
            ET.SubElement(
                case,
                "error",
                message=f"{error['stage']}/{error['code']}: {error['detail']}",
                type="errored",
            )
        elif probe["outcome"] == "inconclusive":
            ET.SubElement(case, "skipped", message=f"NOT MEASURED: {probe['diagnostic']}")
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _sarif(document: Mapping[str, Any], signoffs: Sequence[SignOff]) -> str:
    findings = finding_states(document, signoffs)
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for finding in findings:
        owasp = str(finding["owasp"])
        rules.setdefault(
            owasp,
            {
                "id": owasp,
                "name": OWASP_TITLES.get(owasp, owasp).replace(" ", ""),
                "shortDescription": {"text": f"OWASP {owasp}: {OWASP_TITLES.get(owasp, '')}"},
            },
        )
        result: dict[str, Any] = {
            "ruleId": owasp,
            "level": _SARIF_LEVEL.get(str(finding["severity"]), "warning"),
            "message": {"text": f"{finding['id']} ({finding['probe_id']}): {finding['summary']}"},
            "partialFingerprints": {"vitrineFinding": str(finding["id"])},
            "properties": {
                "severity": finding["severity"],
                "attack": finding["attack_id"],
                "evidence": finding["evidence"],
            },
        }
        signed = finding["signoff"]
        if signed is not None:
            result["suppressions"] = [
                {
                    "kind": "external",
                    "status": "accepted",
                    "justification": f"{signed['by']}: {signed['reason']}",
                }
            ]
        results.append(result)
    sarif = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "vitrine-redteam",
                        "informationUri": "https://owasp.org/www-project-top-10-for-large-language-model-applications/",
                        "rules": list(rules.values()),
                    }
                },
                "automationDetails": {"id": f"vitrine-redteam/{document.get('run_id', '')}"},
                "results": results,
            }
        ],
    }
    return json.dumps(sarif, ensure_ascii=False, indent=2) + "\n"
