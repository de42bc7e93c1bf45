"""`nrsack check CAPTURE...`: the conformance checker's command and its report formats.

Exit status: 0 when no reported finding is an error, 1 when one is, 2 for unusable input (one line on
stderr for each unusable capture, after which the others are still checked and reported). With several captures, `flow` in json / sarif is "CAPTURE:ID" instead of the flow id.
"""

import json
import os
import sys
import xml.etree.ElementTree as ET

import click

from nrsack.analyzer.views.cli import fail, max_open_flows_option, open_flows, resolve_captures, warn_truncated
from nrsack.analyzer.rules import REGISTRY, SEVERITIES

FORMATS = ["text", "json", "junit", "sarif"]
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def run(captures, rule_ids, severity, max_open_flows=None):
    """-> ([(capture, flows, findings)] of the usable captures, how many were unusable). An unusable
    capture gets one line on stderr and the others are still checked; an unknown rule ID exits 2 at once."""
    from nrsack.analyzer.rules import checker as C
    from nrsack.analyzer.read import events as E

    results, unusable = [], 0
    for path in captures:
        try:
            cap, flows, found = C.check_path(path, rule_ids, lazy=True,  # in chunks: bounded memory
                                             **open_flows(max_open_flows))
            warn_truncated(cap)
        except E.CaptureError as error:
            click.echo(f"nrsack: error: {error}", err=True)
            unusable += 1
            continue
        except KeyError as error:
            fail(f"unknown rule ID {error.args[0]} (known: {', '.join(REGISTRY)})")
        results.append((str(path), flows, C.at_least(found, severity)))  # a ring by its name
    return results, unusable


def flow_name(flow):
    return f"{flow.protocol} {flow.endpoints[0]} <-> {flow.endpoints[1]}"


def text_report(results):
    lines = []
    for path, _, findings in results:
        for f in findings:
            where = f"flow {f['flow']} {f['direction']}" if f["flow"] is not None else "no flow"
            frames = ",".join(map(str, f["frames"]))
            lines.append(f"{path}: frame {f['frames'][-1]}: {f['rule']} {f['severity']}: {f['message']} "
                         f"[{where}; frames {frames}]")
        counts = {s: sum(f["severity"] == s for f in findings) for s in SEVERITIES}
        lines.append(f"{path}: " + ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items()))
    return "\n".join(lines)


def json_report_parts(results, batch=4096):
    """The json report in pieces of up to `batch` findings (tens of thousands of notes need not be one
    string): one finding per line, written by json's C encoder or from a run's template (indent= takes
    json's Python encoder, which costs more than checking the capture when an NR-01 note stands on every
    ack); flow as "CAPTURE:ID" when there are several captures."""
    from nrsack.analyzer.rules.checker import json_lines

    opening = '{"findings": [\n'
    for path, _, findings in results:
        lines = []
        for line in json_lines(findings, os.path.basename(path) if len(results) > 1 else None):
            lines.append(line)
            if len(lines) == batch:
                yield opening + ",\n".join(lines)
                opening, lines = ",\n", []
        if lines:
            yield opening + ",\n".join(lines)
            opening = ",\n"
    yield '{"findings": []}' if opening.startswith("{") else "\n]}"


def junit_report(results, rule_ids):
    """One <testsuite> per capture, one <testcase> per rule per flow (the rules of the flow's protocol);
    error findings fail the test case, warnings and notes are listed in its system-out."""
    from nrsack.analyzer.rules.checker import applies, select

    rules = select(rule_ids)
    root = ET.Element("testsuites", name="nrsack check")
    total = failed = 0
    for path, flows, findings in results:
        suite = ET.SubElement(root, "testsuite", name=path)
        cases = [(r, flow) for flow in flows if flow is not None for r in rules if applies(r, flow.protocol)]
        cases += [(r, None) for r in rules if "" in r.levels and any(f["flow"] is None and f["rule"] == r.id for f in findings)]
        suite_failed = 0
        for r, flow in cases:
            flow_id = flow.id if flow is not None else None
            mine = [f for f in findings if f["rule"] == r.id and f["flow"] == flow_id]
            case = ET.SubElement(suite, "testcase", name=f"{r.id} {r.name}",
                                 classname=f"{os.path.basename(path)}.flow{flow_id if flow is not None else '-'}",
                                 time="0")
            if flow is not None:
                ET.SubElement(case, "properties").append(ET.Element("property", name="flow", value=flow_name(flow)))
            errors = [f for f in mine if f["severity"] == "error"]
            if errors:
                suite_failed += 1
                failure = ET.SubElement(case, "failure", message=errors[0]["message"], type=r.id)
                failure.text = "\n".join(f"frames {f['frames']}: {f['message']}" for f in errors)
            others = [f for f in mine if f["severity"] != "error"]
            if others:
                ET.SubElement(case, "system-out").text = "\n".join(
                    f"{f['severity']}: frames {f['frames']}: {f['message']}" for f in others)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(suite_failed))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        total += len(cases)
        failed += suite_failed
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def sarif_report(results, rule_ids):
    """SARIF 2.1.0: one run, the rules as reportingDescriptors, a result per finding located in the capture
    file; frames, flow and direction in the result's properties."""
    from nrsack.analyzer.rules.checker import select

    level = {"error": "error", "warning": "warning", "note": "note"}
    rules = select(rule_ids)
    index = {r.id: i for i, r in enumerate(rules)}
    sarif_results = []
    for path, _, findings in results:
        for f in findings:
            sarif_results.append({
                "ruleId": f["rule"], "ruleIndex": index[f["rule"]], "level": level[f["severity"]],
                "message": {"text": f["message"]},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": path}},
                               "logicalLocations": [{"name": f"frame {f['frames'][-1]}", "kind": "member"}]}],
                "properties": {"frames": f["frames"], "flow": f["flow"], "direction": f["direction"]},
            })
    return json.dumps({
        "version": "2.1.0", "$schema": SARIF_SCHEMA,
        "runs": [{"tool": {"driver": {"name": "nrsack check",
                                      "rules": [{"id": r.id, "shortDescription": {"text": r.summary},
                                                 "defaultConfiguration": {"level": level[r.severity]}} for r in rules]}},
                  "results": sarif_results}],
    }, indent=1)


def _rule_list(ctx, param, value):
    if value is None:
        return None
    return [v.strip().upper() for v in value.split(",") if v.strip()]


@click.command()
@click.argument("captures", nargs=-1, required=True, type=click.Path(), metavar="CAPTURE...")
@click.option("--rules", "rule_ids", callback=_rule_list, default=None, metavar="ID,...",
              help="Only these rules (default: every rule of `nrsack docs rules`).")
@click.option("--severity", type=click.Choice(list(SEVERITIES)), default="note", show_default=True,
              help="Report findings of this severity or more severe.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None, help="Write the report here.")
@max_open_flows_option
@click.option("--separate", is_flag=True,
              help="Each file its own capture, even where the files continue each other (a ring).")
def check(captures, rule_ids, severity, fmt, out_file, max_open_flows, separate):
    """Conformance of the NR-SACK / FSACK peers in CAPTURE... to the rules of `nrsack docs rules`.

    Files that continue each other (a tcpdump ring) are one capture, as `nrsack analyze` reads them; a
    folder stands for the capture files in it.

    Each finding: rule ID, severity, flow (the analyzer's flow id; "CAPTURE:ID" with several captures),
    direction (data sender -> receiver), frames (1-based, the breaking frame last) and a message.
    junit: one test case per rule per flow, error findings fail it. Exit status 0 without an error
    finding, 1 with one, 2 for unusable input."""
    results, unusable = run(resolve_captures(captures, separate), rule_ids, severity, max_open_flows)
    report = {"text": lambda: [text_report(results)], "json": lambda: json_report_parts(results),
              "junit": lambda: [junit_report(results, rule_ids)], "sarif": lambda: [sarif_report(results, rule_ids)]}[fmt]()
    if out_file:
        try:
            with open(out_file, "w") as handle:
                for part in report:
                    handle.write(part)
                handle.write("\n")
        except OSError as error:
            fail(f"{out_file}: {error.strerror}")
    elif results or fmt != "text":  # no text at all when no capture could be read
        for part in report:
            click.echo(part, nl=False)
        click.echo()
    from nrsack.analyzer.rules.checker import at_least

    if unusable:
        sys.exit(2)  # after the report of the usable ones: one bad file does not hide the others' findings
    sys.exit(1 if any(len(at_least(findings, "error")) for _, _, findings in results) else 0)
