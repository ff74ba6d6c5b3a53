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
    usage = lines[0].split("usage: ", 1)[1]
    paras, cur = [], []
    for line in lines[1:]:
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
                m = re.match(r"^\s{2,6}(-\S.*?)\s{2,}(\S.*)$", line)
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
                if table and line.startswith("  "):
                    parts = line.split()
                    keys.append((parts[0], parts[1], parts[2], parts[3] == "reload",
                                 " ".join(parts[4:])))
        else:
            prose.append(p)
    return usage, options, keys, prose


def version(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def page8(usage, options, keys, prose, ver):
    out = [f'.TH PAYCALLBACK 8 "" "paycallback {ver}" "System Administration"',
           ".SH NAME", "paycallback \\- idempotent payment callbacks, tokens and order state changes over HTTP",
           ".SH SYNOPSIS", ".B " + roff(usage), ".SH DESCRIPTION", roff(" ".join(prose[0]))]
    out += [".SH OPTIONS"]
    for flag, desc in options:
        out += [".TP", ".B " + roff(flag), roff(desc)]
    sections = {"SIGNALS": "SIGTERM", "EXIT STATUS": "Exit status", "LOGGING": "Logs are"}
    for title, start in sections.items():
        for p in prose[1:]:
            if p[0].startswith(start):
                out += [f".SH {title}", roff(" ".join(l.strip() for l in p))]
    out += [".SH ENVIRONMENT",
            "Every configuration key can be overridden by a variable; see",
            ".BR paycallback.json (5)", "for the full table."]
    for key, env, _, _, default in keys:
        if key == "-":
            out += [".TP", ".B " + roff(env), roff(f"the development switch: {default} (default 0)")]
        elif env != "-":
            out += [".TP", ".B " + roff(env), roff(f"overrides {key} (default {default})")]
    out += [".SH FILES", ".TP", ".I /etc/paycallback/paycallback.json",
            "the configuration read by the systemd unit", ".TP", ".I /usr/share/paycallback/",
            "the schema migrations (migrations/), also built into the binary:",
            "paycallback migrate applies them",
            ".SH SEE ALSO", ".BR paycallback.json (5),", ".BR systemctl (1)"]
    return "\n".join(out) + "\n"


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
    for key, env, rng, reload, default in keys:
        if key == "-":                    # the development switch: not a key of the file
            continue
        text = f"Default: {default}. Range: {rng}."
        if env != "-":
            text += f" Environment: {env}."
        text += " Reloaded by SIGHUP." if reload else " Needs a restart."
        out += [".TP", ".B " + roff(key), roff(text)]
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
