#!/usr/bin/python3
"""Check docs/openapi.yaml beyond "it parses": OpenAPI 3.1, every $ref
resolves, operations are complete (unique operationId, responses, declared
path parameters, JSON error replies use the Error schema), and the Error
code enum is exactly the contract's list, every header of the contract is
described, and the documented operations are exactly the service's routes
(read from the route table in src/http/http.c). When openapi-spec-validator is
importable it validates the document against the 3.1 schema as well.

usage: check-openapi.py [PATH]   (default: docs/openapi.yaml under the repo)
Exit status 0 when every check passes, 1 with one line per problem.
Needs only python3 and python3-yaml (Debian packages)."""
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
CONTRACT_CODES = {
    "BAD_REQUEST", "BAD_SIGNATURE", "UNAUTHORIZED", "NOT_FOUND", "METHOD_NOT_ALLOWED",
    "PAYLOAD_TOO_LARGE", "URI_TOO_LONG", "HEADER_TOO_LARGE", "REQUEST_TIMEOUT", "NOT_IMPLEMENTED",
    "ORDER_NOT_FOUND", "SKU_NOT_FOUND", "PAY_NO_CONFLICT", "AMOUNT_MISMATCH", "REPEAT_SUBMIT",
    "OUT_OF_STOCK", "ILLEGAL_TRANSITION", "BUSY", "UNAVAILABLE", "INTERNAL",
    "IDEMPOTENCY_KEY_IN_USE", "IDEMPOTENCY_KEY_MISMATCH",
}
HEADERS = ("name: Idempotent-Token", "name: X-Timestamp", "name: X-Signature",
           "name: X-Request-Id", "Retry-After:", "Allow:", "name: Idempotency-Key",
           "Idempotent-Replayed:", "WWW-Authenticate:")
ROUTE_SOURCE = os.path.join(ROOT, "src", "http", "http.c")
# One entry of the route table:
#   { "POST", "/pay/callback", handle_pay_callback, 0 },
#   { "GET", "/metrics", handle_metrics, ROUTE_OPERATOR },
ROUTE_RE = re.compile(r'\{\s*"([A-Z]+)",\s*"(/[^"]*)",\s*\w+(?:,\s*([\w|\s]+?))?\s*\}')
OPERATOR_FLAG = "ROUTE_OPERATOR"
OPERATOR_SCHEME = "operatorKey"


def route_table():
    """(method, pattern, flags text) of every entry of the route table."""
    with open(ROUTE_SOURCE, encoding="utf-8") as f:
        return [(m.lower(), p, flags or "") for m, p, flags in ROUTE_RE.findall(f.read())]


def routes():
    """(method, pattern) of every entry of the service's route table."""
    return {(m, p) for m, p, _ in route_table()}


def check_security(doc, problems):
    """Operator routes require the operator key and document its 401;
    no other route requires it."""
    paths = doc.get("paths") or {}
    for m, p, flags in route_table():
        op = (paths.get(p) or {}).get(m)
        if not isinstance(op, dict):
            continue
        schemes = {k for req in op.get("security") or [] for k in (req or {})}
        if OPERATOR_FLAG in flags:
            if OPERATOR_SCHEME not in schemes:
                problems.append(f"{m.upper()} {p} needs an operator key: security must list "
                                f"{OPERATOR_SCHEME}")
            if "401" not in (op.get("responses") or {}):
                problems.append(f"{m.upper()} {p} needs an operator key but documents no 401")
        elif OPERATOR_SCHEME in schemes:
            problems.append(f"{m.upper()} {p} is open but documented as needing an operator key")


def check_routes(doc, text, problems):
    served = routes()
    if not served:
        problems.append(f"no route table found in {ROUTE_SOURCE}: update ROUTE_RE")
        return
    documented = {(m, str(p)) for p, item in (doc.get("paths") or {}).items()
                  for m in (item or {}) if m in METHODS}
    for m, p in sorted(served - documented):
        problems.append(f"route {m.upper()} {p} is not documented under paths")
    for m, p in sorted(documented - served):
        problems.append(f"{m.upper()} {p} is documented but no route serves it")
    for h in HEADERS:
        if h not in text:
            problems.append(f"the contract's header is not described: no {h!r}")


def resolve(doc, ref):
    """The object a local $ref points at, or None."""
    if not ref.startswith("#/"):
        return None
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def walk_refs(doc, node, where, problems):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and resolve(doc, ref) is None:
            problems.append(f"{where}: $ref {ref} does not resolve")
        for k, v in node.items():
            walk_refs(doc, v, f"{where}/{k}", problems)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            walk_refs(doc, v, f"{where}/{i}", problems)


def deref(doc, node):
    while isinstance(node, dict) and "$ref" in node:
        node = resolve(doc, node["$ref"]) or {}
    return node


def check_operation(doc, path, method, op, seen_ids, problems):
    where = f"{method.upper()} {path}"
    op_id = op.get("operationId")
    if not op_id:
        problems.append(f"{where}: no operationId")
    elif op_id in seen_ids:
        problems.append(f"{where}: operationId {op_id} used twice")
    seen_ids.add(op_id)
    responses = op.get("responses") or {}
    if not responses:
        problems.append(f"{where}: no responses")
    if not any(str(code).startswith("2") for code in responses):
        problems.append(f"{where}: no 2xx response")
    for code in ("404", "405", "413"):               # any request can get these
        if code not in responses:
            problems.append(f"{where}: {code} is not documented")
    if "security" not in op:
        problems.append(f"{where}: no security (use [] for a public route)")
    params = [deref(doc, p) for p in op.get("parameters", [])]
    declared = {p.get("name") for p in params if p.get("in") == "path"}
    for name in re.findall(r"{([^}]+)}", path):
        if name not in declared:
            problems.append(f"{where}: path parameter {name} is not declared")
    for code, resp in responses.items():
        resp = deref(doc, resp)
        if not str(code).startswith(("4", "5")):
            continue
        schema = (resp.get("content", {}).get("application/json", {}) or {}).get("schema", {})
        # oneOf: a gateway route answers in the gateway's failure format
        # where it has one; the service's Error must still be among them.
        refs = [schema.get("$ref")] + [s.get("$ref") for k in ("allOf", "oneOf")
                                       for s in schema.get(k, [])]
        if "#/components/schemas/Error" not in refs:
            problems.append(f"{where}: {code} reply is not the Error schema")


def check(path):
    problems = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict):
        return [f"{path}: not a YAML mapping"]
    if not str(doc.get("openapi", "")).startswith("3.1"):
        problems.append(f"openapi is {doc.get('openapi')!r}, want 3.1.x")
    for key in ("info", "paths", "components"):
        if key not in doc:
            problems.append(f"missing top-level {key}")
    walk_refs(doc, doc, "#", problems)
    check_routes(doc, text, problems)
    check_security(doc, problems)
    seen_ids = set()
    for p, item in (doc.get("paths") or {}).items():
        if not str(p).startswith("/"):
            problems.append(f"path {p!r} does not start with /")
        for method, op in (item or {}).items():
            if method in METHODS:
                check_operation(doc, p, method, op or {}, seen_ids, problems)
    codes = (((doc.get("components") or {}).get("schemas") or {}).get("Error") or {})
    codes = set(((codes.get("properties") or {}).get("code") or {}).get("enum") or [])
    if codes != CONTRACT_CODES:
        missing, extra = CONTRACT_CODES - codes, codes - CONTRACT_CODES
        problems.append(f"Error.code enum differs from the contract: missing {sorted(missing)}, "
                        f"unknown {sorted(extra)}")
    try:
        from openapi_spec_validator import validate
    except ImportError:
        validate = None
    if validate is not None:
        try:
            validate(doc)
        except Exception as e:  # the validator raises its own error types
            problems.append(f"openapi-spec-validator: {str(e).splitlines()[0]}")
    return problems


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "openapi.yaml")
    problems = check(path)
    for p in problems:
        print(f"check-openapi: {p}", file=sys.stderr)
    if not problems:
        print(f"check-openapi: {path} ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
