#!/usr/bin/python3
"""Check docs/openapi.yaml beyond "it parses": OpenAPI 3.1, every $ref
resolves, operations are complete (unique operationId, responses, declared
path parameters, JSON error replies use the Error schema), the Error code
enum is exactly the codes of include/http/api_error.h (each described with the
table's status, none spelled out as a string in a handler), every header
of the contract is described, and the documented operations are exactly
the service's routes
(read from the route table in src/app/router.c). When openapi-spec-validator is
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
# The service's API error codes: the one table in include/http/api_error.h,
#   X(ORDER_NOT_FOUND, 404, "no order with this order_no")
ERROR_TABLE = os.path.join(ROOT, "include", "http", "api_error.h")
ERROR_ROW_RE = re.compile(r'^\s*X\((\w+), (\d{3}), "')
# A handler that names a code as a string instead of through the table.
HANDLERS = os.path.join(ROOT, "src", "handlers")
LITERAL_CODE_RE = re.compile(r'http_reply_(?:error\([^,]+,\s*\d+|retry\([^,]+|in_progress\([^,]+),'
                             r'\s*"[A-Z][A-Z0-9_]*"')
DOC_CODE_RE = re.compile(r"`([A-Z][A-Z0-9_]*)` (\d{3}) ")


def error_table():
    """{code: HTTP status} of every row of the API error table."""
    with open(ERROR_TABLE, encoding="utf-8") as f:
        return {m.group(1): int(m.group(2)) for m in map(ERROR_ROW_RE.match, f) if m}


def check_error_codes(doc, problems):
    """Error.code is exactly the table's codes, its description gives each
    the table's status, and no handler spells a code itself."""
    table = error_table()
    if not table:
        problems.append(f"no X(CODE, status, message) rows in {os.path.relpath(ERROR_TABLE, ROOT)}")
        return
    error = (((doc.get("components") or {}).get("schemas") or {}).get("Error") or {})
    code = (error.get("properties") or {}).get("code") or {}
    codes = set(code.get("enum") or [])
    if codes != set(table):
        missing, extra = set(table) - codes, codes - set(table)
        problems.append(f"Error.code enum differs from include/http/api_error.h: missing "
                        f"{sorted(missing)}, unknown {sorted(extra)}")
    described = {c: int(st) for c, st in DOC_CODE_RE.findall(code.get("description") or "")}
    for c, st in sorted(table.items()):
        if c not in described:
            problems.append(f"Error.code description does not describe {c}")
        elif described[c] != st:
            problems.append(f"Error.code description gives {c} status {described[c]}, "
                            f"include/http/api_error.h {st}")
    for name in sorted(os.listdir(HANDLERS)):
        if not name.endswith(".c"):
            continue
        with open(os.path.join(HANDLERS, name), encoding="utf-8") as f:
            text = f.read()
        for m in LITERAL_CODE_RE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"src/handlers/{name}:{line}: names an error code as a string, "
                            f"not through api_error.h")


HEADERS = ("name: Idempotent-Token", "name: X-Timestamp", "name: X-Signature",
           "name: X-Request-Id", "Retry-After:", "Allow:", "name: Idempotency-Key",
           "Idempotent-Replayed:", "WWW-Authenticate:")
ROUTE_SOURCE = os.path.join(ROOT, "src", "app", "router.c")
# One entry of the route table: method, pattern, handler, lane, guard, flags:
#   { "POST", "/pay/callback", handle_pay_callback, WORK, OPEN, 0 },
#   { "GET", "/metrics", handle_metrics, OPS, operator_key, METRICS },
ROUTE_RE = re.compile(r'\{\s*"([A-Z]+)",\s*"(/[^"]*)",\s*\w+(?:,\s*([\w|,\s]+?))?\s*\}')
OPERATOR_FLAG = "operator_key"
CALLER_FLAG = "caller_key"        # the key is optional: security lists {} and the scheme
OPERATOR_SCHEME = "operatorKey"
# The scope flags of the route table (operator_key, READ) and the scope
# names the operation documents as x-required-scope.
SCOPE_FLAGS = {"READ": "read", "ORDERS": "orders", "REFUNDS": "refunds",
               "EVENTS": "events", "METRICS": "metrics", "AUDIT": "audit",
               "ANY": "any"}  # ANY: any operator key, whatever its scopes (no 403)


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
            named = [f.strip() for f in re.split(r"[|,]", flags)]
            scope = [v for k, v in SCOPE_FLAGS.items() if k in named]
            if len(scope) != 1:
                problems.append(f"{m.upper()} {p}: the route table names no single scope")
            elif op.get("x-required-scope") != scope[0]:
                problems.append(f"{m.upper()} {p} needs the scope {scope[0]}: x-required-scope "
                                f"says {op.get('x-required-scope')!r}")
            if "403" not in (op.get("responses") or {}) and scope != ["any"]:
                problems.append(f"{m.upper()} {p} checks a scope but documents no 403")
        elif CALLER_FLAG in flags:
            if OPERATOR_SCHEME not in schemes or {} not in (op.get("security") or []):
                problems.append(f"{m.upper()} {p} takes an optional operator key: security must "
                                f"list {{}} and {OPERATOR_SCHEME}")
            if "401" not in (op.get("responses") or {}):
                problems.append(f"{m.upper()} {p} checks a key it is sent but documents no 401")
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
    check_error_codes(doc, problems)
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
