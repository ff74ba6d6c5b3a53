#!/usr/bin/env python3
"""Generate the man pages paycallback(8) and paycallback.json(5) from the
binary's own --help, whose key table is the configuration's key table, so
the pages cannot drift from the code.

usage: gen-man.py BINARY OUTDIR     writes OUTDIR/paycallback.8 and
                                    OUTDIR/paycallback.json.5
"""
import os
import re
import subprocess
import sys


def roff(s):
    """Escapes text for roff: backslashes, and a leading dot or quote."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", s, flags=re.M)


def parse_help(text):
    lines = text.split("\n")
    usage = [lines[0].split("usage: ", 1)[1]]
    rest = 1
    while rest < len(lines) and lines[rest].strip().startswith("paycallback "):
        usage.append(lines[rest].strip())
        rest += 1
    paras, cur = [], []
    for line in lines[rest:]:
        if line.strip() == "":
            if cur:
                paras.append(cur)
            cur = []
        else:
            cur.append(line)
    if cur:
        paras.append(cur)
    options, keys, prose = [], [], []
    for p in paras:
        if p[0].startswith("  -"):
            for line in p:
                m = re.match(r"^\s{2,6}(-\S.*?|[a-z]+(?: [a-z]+)?)\s{2,}(\S.*)$", line)
                if m:
                    options.append([m.group(1).strip(), m.group(2).strip()])
                elif options:
                    options[-1][1] += " " + line.strip()
        elif any(re.match(r"^\s+key\s+environment\s+range\s+sighup\s+default", l) for l in p):
            head = [l for l in p if not l.startswith("  ")]
            prose.append(head)
            table = False
            for line in p:
                if re.match(r"^\s+key\s+environment", line):
                    table = True
                    continue
                if table and line.startswith("      ") and keys:
                    keys[-1][5].append(line.strip())        # the key's meaning
                elif table and line.startswith("  "):
                    parts = line.split()
                    keys.append((parts[0], parts[1], parts[2], parts[3] == "reload",
                                 " ".join(parts[4:]), []))
        else:
            prose.append(p)
    return usage, options, keys, prose


def version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def page8(usage, options, keys, prose, ver):
    out = [f'.TH PAYCALLBACK 8 "" "paycallback {ver}" "System Administration"',
           ".SH NAME", "paycallback \\- idempotent payment callbacks, tokens and order state changes over HTTP",
           ".SH SYNOPSIS"]
    for i, u in enumerate(usage):
        out += ([".br"] if i else []) + [".B " + roff(u)]
    out += [".SH DESCRIPTION", roff(" ".join(l.strip() for l in prose[0]))]
    out += [".SH OPTIONS"]
    for flag, desc in options:
        out += [".TP", ".B " + roff(flag), roff(desc)]
    sections = {"SIGNALS": "SIGTERM", "EXIT STATUS": "Exit status", "LOGGING": "Logs are"}
    for title, start in sections.items():
        for p in prose[1:]:
            if p[0].startswith(start):
                text = " ".join(l.strip() for l in p)
                # The paragraph leads into the key table of --help, which
                # is ENVIRONMENT below and KEYS of paycallback.json(5).
                text = re.sub(r":$", " (see ENVIRONMENT).", text)
                out += [f".SH {title}", roff(text)]
    out += [".SH ENVIRONMENT",
            "Every configuration key can be overridden by a variable; see",
            ".BR paycallback.json (5)", "for the full table."]
    for key, env, _, _, default, _ in keys:
        if key == "-":
            out += [".TP", ".B " + roff(env), roff(f"the development switch: {default} (default 0)")]
        elif env != "-":
            out += [".TP", ".B " + roff(env), roff(f"overrides {key} (default {default})")]
    out += [".SH FILES", ".TP", ".I /etc/paycallback/paycallback.json",
            "the configuration read by the systemd unit", ".TP", ".I /etc/default/paycallback",
            "PAYCALLBACK_* variables for the unit, read at start only", ".TP",
            ".I /usr/sbin/paycallback\\-setup\\-db",
            "creates the database, the account and its grants on the local MariaDB and",
            "applies the schema", ".TP", ".I /usr/share/paycallback/",
            "the schema migrations (migrations/), also built into the binary:",
            "paycallback migrate applies them",
            ".SH SEE ALSO", ".BR paycallback.json (5),", ".BR systemctl (1)"]
    return "\n".join(out) + "\n"


# paycallback.json(5) beyond the key table: the members of the lists, the
# formats, examples. (name, kinds, meaning) for each gateway profile member,
# as src/config/gateway_cfg.c reads them.
PROFILE_MEMBERS = [
    ("name", "all", "1..32 of [a-z0-9_-], unique; the route is POST /pay/callback/NAME"),
    ("kind", "all", "alipay, wechatpay_v3 or stripe"),
    ("app_id", "alipay (required), wechatpay_v3 (optional)",
     "the notification's app_id (appid) must equal it"),
    ("mchid", "wechatpay_v3 (required)", "the transaction's mchid must equal it"),
    ("public_key, public_key_file", "alipay (exactly one)",
     "Alipay's RSA public key, inline or as a path: PEM, certificate PEM, or the bare base64 "
     "the console shows"),
    ("platform_keys", "wechatpay_v3 (1..4)",
     "objects {serial, public_key or public_key_file}; the key is picked by the "
     "Wechatpay-Serial header, several during a rotation"),
    ("currency", "all (default CNY)", "ISO 4217 code of notifications that state none"),
    ("tolerance_s", "wechatpay_v3, stripe (default 300)",
     "allowed distance of the signed timestamp from now, either way; 1..86400"),
    ("secret_env", "wechatpay_v3, stripe",
     "the variable holding the profile's one secret (Stripe's endpoint secret, the APIv3 key); "
     "default PAYCALLBACK_GATEWAY_<NAME>_SECRET. Secrets are never read from the file"),
    ("query_url", "all (optional)",
     "http:// or https:// URL the reconciliation asks about stale orders; no user info, no "
     "fragment"),
    ("query_token_env", "all, with query_url",
     "the variable holding the bearer token sent to query_url; default "
     "PAYCALLBACK_GATEWAY_<NAME>_QUERY_TOKEN"),
    ("query_timeout_ms", "all, with query_url (default 5000)",
     "bound on one query, connect included; 100..60000"),
]

EXAMPLE = """{
  "listen": { "address": "127.0.0.1", "port": 8080 },
  "mysql": { "host": "127.0.0.1", "port": 3306, "user": "paycallback",
             "password": "(written by paycallback-setup-db)", "database": "paycallback" },
  "redis": { "host": "127.0.0.1", "port": 6379 },
  "callback": { "secret": "(openssl rand -hex 32)" },
  "auth": { "keys": [ { "name": "shop", "key": "(openssl rand -hex 32)" },
                      { "name": "ops", "key": "(openssl rand -hex 32)" } ] },
  "webhook": { "url": "https://shop.example/paycallback-events",
               "secret": "whsec_(openssl rand -base64 32)" },
  "gateways": [
    { "name": "alipay", "kind": "alipay", "app_id": "2021000000000001",
      "public_key_file": "/etc/paycallback/alipay_public.pem", "currency": "CNY" },
    { "name": "wechat", "kind": "wechatpay_v3", "mchid": "1230000109",
      "app_id": "wxd678efh567hg6787",
      "platform_keys": [ { "serial": "5157F09EFDC096DE15EBE81A47057A7232F1B8E1",
          "public_key_file": "/etc/paycallback/wechatpay_platform.pem" } ],
      "secret_env": "WECHATPAY_APIV3_KEY", "tolerance_s": 300 },
    { "name": "stripe", "kind": "stripe", "currency": "USD",
      "secret_env": "STRIPE_WEBHOOK_SECRET" }
  ]
}"""


def page5_formats():
    out = [".SH GATEWAY PROFILES",
           "gateways is an array of at most 16 objects, one per payment gateway that calls",
           ".BR \"POST /pay/callback/NAME\" .",
           "A member a profile's kind does not read, or one it lacks, stops the start with the",
           "profile's name. Members:"]
    for name, kinds, meaning in PROFILE_MEMBERS:
        out += [".TP", ".B " + roff(name), roff(f"({kinds}) {meaning}.")]
    out += [".PP", "Every key file and secret is loaded at start and by --check-config: a missing one",
            "stops the service with exit status 2.",
            ".SH WEBHOOK ENDPOINTS",
            "webhooks is an array of objects, at most 8 endpoints counting the one of",
            "webhook.url (named default) when set, each receiving the event types it lists, signed",
            "the Standard Webhooks way with its own secret. Members: name (1..32 of",
            "[a-z0-9_\\-], unique), url (http or https), events (known types; all when absent),",
            "secret (whsec_ and base64), previous_secret and previous_secret_until (rotation:",
            "both sign until that time), format (standard, or legacy X\\-Signature),",
            "timeout_ms, max_attempts, backoff_base_ms, backoff_max_ms (default: webhook.*),",
            "rate_per_s (0: unlimited), disabled. SIGHUP adds, removes and disables endpoints;",
            "events waiting for a removed endpoint are reported, not dropped. See",
            ".I docs/webhooks.md .",
            ".SH AUTH KEYS",
            "auth.keys is an array of at most 16 objects {\"name\": NAME, \"key\": KEY,",
            "\"scopes\": [SCOPE, ...]}; scopes (read, orders, refunds, events, metrics, audit)",
            "limit what the key may do and default to all of them. NAME is",
            "1..32 characters of [A-Za-z0-9_.-] and appears in the request log as the caller;",
            "KEY is 16..128 characters of [A-Za-z0-9-._~+/] (then = padding), sent as",
            ".BR \"Authorization: Bearer KEY\" .",
            "Names and keys are unique. The environment form replaces the file's list whole:",
            "(name:key, or name:key:scope+scope):",
            ".EX", "PAYCALLBACK_AUTH_KEYS=shop:KEY1:orders+read,ops:KEY2", ".EE",
            "Generate keys with openssl rand \\-hex 32.",
            ".SH MYSQL SHARDS",
            "mysql.shards spreads orders over several databases (empty: mysql.* alone). In the file,",
            "an array of objects {\"id\": 1..N, \"host\": H, \"port\": P, \"database\": D}; id is",
            "required and never changes, host, port and database default to mysql.*'s. In the",
            "environment, the same list as id=host:port/database entries separated by commas",
            "(host, :port and /database may each be left out):",
            ".EX", "PAYCALLBACK_MYSQL_SHARDS=1=10.0.0.1:3306/paycallback,2=10.0.0.2:3306/paycallback",
            ".EE",
            "Every shard holds the full schema (paycallback migrate brings each to this build's",
            "version) and is reached with mysql.user and mysql.password.",
            ".SH PLACEHOLDERS",
            "The packaged file marks each value its owner must set with a value starting with",
            ".BR CHANGE\\-ME ;",
            "the service refuses to start while any remains (paycallback migrate only looks at",
            "the mysql keys). paycallback\\-setup\\-db fills mysql.password.",
            ".SH EXAMPLES",
            "A production file with one profile per gateway kind (values in parentheses are to",
            "be generated; the gateways' secrets come from the environment, e.g.",
            "/etc/default/paycallback):",
            ".PP", ".EX"] + [roff(l) for l in EXAMPLE.split("\n")] + [".EE",
            ".PP", "Check it without starting the service:",
            ".EX", "paycallback \\-c /etc/paycallback/paycallback.json \\-\\-check\\-config", ".EE",
            ".SH FILES", ".TP", ".I /etc/paycallback/paycallback.json",
            "the file the systemd unit reads (mode 0640, group paycallback)", ".TP",
            ".I /etc/default/paycallback",
            "PAYCALLBACK_* variables for the unit (gateway secrets, overrides), read at start only"]
    return out


def page5(keys, ver):
    out = [f'.TH PAYCALLBACK.JSON 5 "" "paycallback {ver}" "File Formats"',
           ".SH NAME", "paycallback.json \\- configuration of paycallback(8)",
           ".SH DESCRIPTION",
           "A JSON object; a dotted key such as mysql.host is the member host of the object mysql.",
           "An unknown key, a value of the wrong type or out of range stops the service at start",
           "with exit status 2. Every key can be overridden by the environment variable shown,",
           "which wins over the file.",
           "A range a..b bounds a number; len<=n or len1..n bounds a string's bytes",
           "(len1.. means it may not be empty); n<=k bounds a list's entries.",
           "SIGHUP re-reads the file: keys marked reloaded by SIGHUP take their new value for",
           "every request that starts afterwards; any other changed key is logged and keeps",
           "its running value until a restart. A file that does not load is refused whole.",
           ".SH KEYS"]
    for key, env, rng, reload, default, doc in keys:
        if key == "-":                    # the development switch: not a key of the file
            continue
        text = " ".join(doc) + f". Default: {default}. Range: {rng}."
        if env != "-":
            text += f" Environment: {env}."
        text += " Reloaded by SIGHUP." if reload else " Needs a restart."
        out += [".TP", ".B " + roff(key), roff(text)]
    out += page5_formats()
    out += [".SH SEE ALSO", ".BR paycallback (8)"]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, outdir = sys.argv[1], sys.argv[2]
    text = subprocess.run([binary, "--help"], capture_output=True, text=True, check=True).stdout
    usage, options, keys, prose = parse_help(text)
    if not options or not keys:
        sys.exit("gen-man: --help has no options or no key table: update parse_help")
    ver = version(binary)
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "paycallback.8"), "w", encoding="utf-8") as f:
        f.write(page8(usage, options, keys, prose, ver))
    with open(os.path.join(outdir, "paycallback.json.5"), "w", encoding="utf-8") as f:
        f.write(page5(keys, ver))
    print(f"gen-man: {len(options)} options, {len(keys)} keys -> {outdir}")


if __name__ == "__main__":
    main()
