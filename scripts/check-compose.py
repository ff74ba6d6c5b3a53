#!/usr/bin/python3
"""Check docker-compose.yml and the Dockerfile without a Docker engine.

Parses both and asserts their structure: the mariadb:10.11 / redis:7 / service
trio with every image pinned to an exact version (or a digest), health checks, depends_on conditions, the one-shot migrate service
the service waits for (and no schema in MySQL's init directory), the
published port, the stop grace period, and a
multi-stage Debian 12 image running as a non-root user. Then it computes
the configuration the service gets in the container (config/paycallback.json
as shipped, then the image's ENV, then the compose environment, with the
PAYCALLBACK_<SECTION>_<KEY> rule of src/config/config.c) and asserts it differs
from the shipped one only in the endpoint keys and the secrets. Secrets
must come from the environment of `docker compose` (required ones as
${NAME:?message}), never as a value in either file, and neither file may
set the development switch.

usage: check-compose.py [--compose PATH] [--dockerfile PATH] [--self-test]
Exit status 0 when everything holds, 1 with one line per problem.
--self-test breaks one rule at a time in a copy of the repo's files (the
MUTATIONS below) and fails unless the check catches every one, so that the
check cannot silently pass everything.
Needs only python3 and python3-yaml (Debian packages)."""
import argparse
import json
import os
import re
import shlex
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The keys allowed to differ from the shipped config inside the stack.
ENDPOINT_KEYS = {"listen.address", "mysql.host", "mysql.port", "redis.host", "redis.port",
                 "console.dir"}  # where the image keeps the console's pages
# Secrets: never a value in the compose file or the image; each is passed
# through from the environment of `docker compose`, the required ones as
# ${NAME:?message} so that compose itself refuses to start without them.
SECRET_KEYS = {"callback.secret": True, "callback.previous_secret": False,  # key: required
               "auth.keys": True, "mysql.password": True}
# An image named by an exact version: debian:12.N[-slim], mariadb:10.11.N,
# redis:7.N.N, or anything @sha256:<digest>.
PINNED = re.compile(r"(.+@sha256:[0-9a-f]{64}|debian:12\.\d+(-slim)?|mariadb:10\.11\.\d+|"
                    r"redis:7\.\d+\.\d+)")
DEV_SWITCH = "PAYCALLBACK_DEV"
RUNTIME_PACKAGES = {"libmicrohttpd12", "libmariadb3", "libhiredis0.14", "libcjson1", "libssl3",
                    "libcurl4", "libsystemd0"}
# The Debian package that gives each pkg-config name of the Makefile's PKGS
# its headers: the build stage must install every one.
DEV_PACKAGES = {"libmicrohttpd": "libmicrohttpd-dev", "libmariadb": "libmariadb-dev",
                "hiredis": "libhiredis-dev", "libcjson": "libcjson-dev",
                "libcrypto": "libssl-dev", "libcurl": "libcurl4-openssl-dev",
                "libsystemd": "libsystemd-dev"}
INIT_DIR = "/docker-entrypoint-initdb.d"

# (file, text, replacement, the rule it breaks): the first occurrence of
# text becomes replacement.
MUTATIONS = [
    ("docker-compose.yml", "${PAYCALLBACK_CALLBACK_SECRET:?", "other${PAYCALLBACK_CALLBACK_SECRET:?",
     "a secret written into the compose file"),
    ("docker-compose.yml", "${PAYCALLBACK_CALLBACK_SECRET:?", "${PAYCALLBACK_CALLBACK_SECRET:-",
     "the secret optional, so compose starts without it"),
    ("docker-compose.yml", "      PAYCALLBACK_CALLBACK_SECRET: ", "      PAYCALLBACK_X_SECRET: ",
     "the secret not passed to the service"),
    ("docker-compose.yml", "${PAYCALLBACK_AUTH_KEYS:?", "${PAYCALLBACK_AUTH_KEYS:-",
     "the operator keys optional, so compose starts without them"),
    ("Dockerfile", "ENV PAYCALLBACK_LISTEN_ADDRESS=0.0.0.0",
     "ENV PAYCALLBACK_LISTEN_ADDRESS=0.0.0.0 PAYCALLBACK_AUTH_KEYS=ops:baked-into-the-image",
     "an operator key baked into the image"),
    ("docker-compose.yml", '      PAYCALLBACK_REDIS_PORT: "6379"\n',
     '      PAYCALLBACK_REDIS_PORT: "6379"\n      PAYCALLBACK_DEV: "1"\n',
     "the development switch set in the stack"),
    ("Dockerfile", "ENV PAYCALLBACK_LISTEN_ADDRESS=0.0.0.0",
     "ENV PAYCALLBACK_LISTEN_ADDRESS=0.0.0.0 PAYCALLBACK_CALLBACK_SECRET=baked",
     "a secret baked into the image"),
    ("docker-compose.yml", '      PAYCALLBACK_REDIS_PORT: "6379"\n',
     '      PAYCALLBACK_REDIS_PORT: "6379"\n      PAYCALLBACK_WORKERS: "4"\n',
     "config differs beyond the endpoints (a key the file does not set)"),
    ("docker-compose.yml", "PAYCALLBACK_MYSQL_HOST", "PAYCALLBACK_MYSQL_HOTS", "misspelt override"),
    ("docker-compose.yml", 'PAYCALLBACK_MYSQL_PORT: "3306"', 'PAYCALLBACK_MYSQL_PORT: "3307"',
     "service points at the wrong MySQL port"),
    ("docker-compose.yml", "condition: service_healthy", "condition: service_started",
     "depends_on without health"),
    ("docker-compose.yml", "condition: service_completed_successfully",
     "condition: service_started", "the service starts before the migrations ran"),
    ("docker-compose.yml", 'command: ["migrate"]', 'command: ["--check-config"]',
     "the migrate service does not migrate"),
    ("docker-compose.yml", "      - mysql-data:/var/lib/mysql",
     "      - ./sql:/docker-entrypoint-initdb.d:ro\n      - mysql-data:/var/lib/mysql",
     "a schema applied behind the migrations' back"),
    ("docker-compose.yml", "image: mariadb:10.11", "image: mysql:8.0", "wrong database server"),
    ("docker-compose.yml", '"mysqladmin", "ping"', '"true", "true"', "MySQL healthcheck"),
    ("docker-compose.yml", "MYSQL_USER: paycallback", "MYSQL_USER: other",
     "MySQL user differs from the config's"),
    ("docker-compose.yml", "      MYSQL_PASSWORD: ${PAYCALLBACK_MYSQL_PASSWORD:?set PAYCALLBACK_MYSQL_PASSWORD to the database password}",
     "      MYSQL_PASSWORD: paycallback", "a development database password in the compose file"),
    ("docker-compose.yml", "      PAYCALLBACK_MYSQL_PASSWORD: ${PAYCALLBACK_MYSQL_PASSWORD:?",
     "      PAYCALLBACK_MYSQL_PASSWORD: ${PAYCALLBACK_MYSQL_PASSWORD:-",
     "the database password optional, so the service runs on the shipped one"),
    ("docker-compose.yml", '"-P", "3306", "--silent"', '"-P", "3306", "-ppaycallback", "--silent"',
     "a password in the health check"),
    ("docker-compose.yml", "image: mariadb:10.11.19", "image: mariadb:10.11", "an unpinned image"),
    ("docker-compose.yml", "image: redis:7.0.15", "image: redis:latest", "an unpinned image"),
    ("Dockerfile", "FROM debian:12.11 AS build", "FROM debian:12 AS build", "an unpinned base"),
    ("docker-compose.yml", "stop_grace_period: 15s", "stop_grace_period: 5s",
     "SIGKILL before the grace period"),
    ("docker-compose.yml", ':8080:8080"', ':8080:9090"', "port not published"),
    ("docker-compose.yml", '"${PUBLISH_ADDRESS:-127.0.0.1}:8080:8080"', '"8080:8080"',
     "port published on every interface"),
    ("docker-compose.yml", "${PUBLISH_ADDRESS:-127.0.0.1}", "${PUBLISH_ADDRESS:-0.0.0.0}",
     "port published on every interface by default"),
    ("docker-compose.yml", "read_only: true", "read_only: false", "a writable container"),
    ("docker-compose.yml", "cap_drop: [ALL]", "cap_drop: [NET_RAW]", "capabilities kept"),
    ("docker-compose.yml", "- no-new-privileges:true", "- apparmor:unconfined",
     "privileges can be gained"),
    ("Dockerfile", "USER paycallback:paycallback", "USER root", "runs as root"),
    ("Dockerfile", "FROM debian:12.11-slim", "FROM ubuntu:24.04", "runtime base"),
    ("Dockerfile", "libhiredis0.14 ", "", "a runtime library missing"),
    ("Dockerfile", "libcurl4-openssl-dev ", "", "a build package of the Makefile's PKGS missing"),
    ("docker-compose.yml", "    image: redis:7.0.15\n    restart: unless-stopped\n",
     "    image: redis:7.0.15\n", "redis not restarted after a reboot"),
    ("Dockerfile", "HEALTHCHECK", "# HEALTHCHECK", "no health check"),
]


class Checker:
    def __init__(self):
        self.problems = []

    def expect(self, ok, message):
        if not ok:
            self.problems.append(message)
        return ok


def config_keys():
    """(section or None, name, type) for every key of src/config/config.c's table."""
    text = open(os.path.join(ROOT, "src", "config", "config.c"), encoding="utf-8").read()
    keys = {}
    for kind, section, name in re.findall(r'^\s*(SR|[ISK])\((NULL|"\w+"), "(\w+)",', text, re.M):
        path = name if section == "NULL" else f"{section.strip(chr(34))}.{name}"
        keys[path] = int if kind == "I" else str      # K: the auth.keys list, "name:key,..."
    return keys


def env_name(path):
    return "PAYCALLBACK_" + path.replace(".", "_").upper()


def flatten(cfg, prefix=""):
    out = {}
    for k, v in cfg.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def env_dict(env):
    """A compose environment (mapping or KEY=VAL list) as a dict of strings."""
    if isinstance(env, dict):
        return {str(k): "" if v is None else str(v) for k, v in env.items()}
    out = {}
    for item in env or []:
        k, _, v = str(item).partition("=")
        out[k] = v
    return out


def test_words(hc):
    """A healthcheck test as one string, whatever its form."""
    t = (hc or {}).get("test")
    if isinstance(t, list):
        return " ".join(str(w) for w in t[1:])
    return str(t or "")


def seconds(duration):
    """Compose durations such as '15s', '1m30s' or a number of seconds."""
    if isinstance(duration, (int, float)):
        return float(duration)
    total, found = 0.0, False
    for num, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(duration)):
        found = True
        total += float(num) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total if found else None


def parse_dockerfile(path):
    """The instructions of each stage: a list of lists of (KEYWORD, args)."""
    stages, joined = [], ""
    for raw in open(path, encoding="utf-8").read().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            if not joined:
                continue
            line = ""
        if line.endswith("\\"):
            joined += line[:-1] + " "
            continue
        line, joined = joined + line, ""
        if not line.strip():
            continue
        word, _, args = line.strip().partition(" ")
        word = word.upper()
        if word == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((word, args.strip()))
    return stages


def check_dockerfile(c, path):
    """Checks the image and returns (image ENV dict, config path, EXPOSEd ports)."""
    if not c.expect(os.path.exists(path), f"{path} is missing"):
        return {}, None, set()
    stages = parse_dockerfile(path)
    c.expect(len(stages) >= 2, "Dockerfile: expected a multi-stage build")
    if not stages:
        return {}, None, set()
    first, final = stages[0], stages[-1]
    pkgs = re.search(r"^PKGS\s*:=\s*(.*)$", open(os.path.join(ROOT, "Makefile"),
                                                   encoding="utf-8").read(), re.M)
    build_runs = " ".join(a for w, a in first if w == "RUN").split()
    for name in (pkgs.group(1).split() if pkgs else []):
        dev = DEV_PACKAGES.get(name)
        if c.expect(dev is not None, f"Makefile: PKGS names {name}, which DEV_PACKAGES of "
                    f"check-compose.py does not map to a Debian package"):
            c.expect(dev in build_runs, f"Dockerfile: build stage lacks {dev} (for {name} "
                     f"of the Makefile's PKGS)")
    base, slim = first[0][1].split()[0], final[0][1].split()[0]
    c.expect(re.fullmatch(r"debian:12\.\d+(@sha256:[0-9a-f]{64})?", base) is not None,
             f"Dockerfile: build stage must be FROM debian:12.N (a pinned point release), is {base!r}")
    c.expect(re.fullmatch(r"debian:12\.\d+-slim(@sha256:[0-9a-f]{64})?", slim) is not None,
             f"Dockerfile: runtime stage must be FROM debian:12.N-slim (pinned), is {slim!r}")
    c.expect(base.split("@")[0] + "-slim" == slim.split("@")[0],
             f"Dockerfile: the two stages must be the same point release ({base!r}, {slim!r})")
    runs = " ".join(a for w, a in final if w == "RUN")
    installed = set(re.findall(r"\b(lib[\w.+-]+)", runs))
    missing = RUNTIME_PACKAGES - installed
    c.expect(not missing, f"Dockerfile: runtime stage lacks {sorted(missing)}")
    c.expect(not any(p.endswith("-dev") for p in installed),
             "Dockerfile: runtime stage installs -dev packages")
    users = [a for w, a in final if w == "USER"]
    c.expect(users and users[-1].split(":")[0] not in ("root", "0"),
             "Dockerfile: runtime stage must end with a non-root USER")
    c.expect(any(w == "HEALTHCHECK" for w, _ in final), "Dockerfile: no HEALTHCHECK")
    c.expect(any(w == "COPY" and "--from=" in a for w, a in final),
             "Dockerfile: the runtime stage must copy the binary from the build stage")
    exposed = {p.split("/")[0] for w, a in final if w == "EXPOSE" for p in a.split()}
    env = {}
    for w, a in final:
        if w == "ENV":
            for tok in shlex.split(a):
                k, _, v = tok.partition("=")
                env[k] = v
    cfg_path = None
    for w, a in final:
        if w in ("ENTRYPOINT", "CMD"):
            try:
                argv = json.loads(a)
            except ValueError:
                argv = shlex.split(a)
            if "-c" in argv[:-1]:
                cfg_path = argv[argv.index("-c") + 1]
    shipped_copy = [a for w, a in final if w == "COPY" and "config/paycallback.json" in a]
    c.expect(cfg_path is not None, "Dockerfile: ENTRYPOINT/CMD must pass -c <config>")
    c.expect(any(a.split()[-1] == cfg_path for a in shipped_copy),
             f"Dockerfile: {cfg_path} must be a COPY of config/paycallback.json")
    return env, cfg_path, exposed


def check_services(c, compose):
    services = compose.get("services") or {}
    for name in ("mysql", "redis", "paycallback"):
        c.expect(name in services, f"compose: no service {name}")
    mysql, redis, svc = (services.get(n) or {} for n in ("mysql", "redis", "paycallback"))
    c.expect(str(mysql.get("image", "")).startswith("mariadb:10.11"),
             "compose: the database must be image mariadb:10.11.x (the schema is MariaDB's)")
    c.expect(str(redis.get("image", "")).startswith("redis:7"), "compose: redis must be image redis:7.x")
    for name in ("mysql", "redis"):
        image = str((services.get(name) or {}).get("image", ""))
        c.expect(PINNED.fullmatch(image) is not None,
                 f"compose: {name} image {image!r} must be pinned to an exact version or a digest")
    hc = test_words(mysql.get("healthcheck"))
    c.expect(not re.search(r"(^|\s)(-p\S|--password)", hc),
             "compose: the mysql health check must not carry a password")
    for name in ("mysql", "redis", "paycallback"):
        c.expect(str((services.get(name) or {}).get("restart", "no")) in
                 ("always", "unless-stopped", "on-failure"),
                 f"compose: {name} must have a restart policy (unless-stopped): after a reboot "
                 f"the stack must come back by itself")
    c.expect("mysqladmin" in test_words(mysql.get("healthcheck")) and
             "ping" in test_words(mysql.get("healthcheck")),
             "compose: mysql healthcheck must be mysqladmin ping")
    c.expect("redis-cli" in test_words(redis.get("healthcheck")) and
             "ping" in test_words(redis.get("healthcheck")),
             "compose: redis healthcheck must be redis-cli ping")
    c.expect("/readyz" in test_words(svc.get("healthcheck")) or
             "/healthz" in test_words(svc.get("healthcheck")),
             "compose: paycallback healthcheck must probe /readyz or /healthz")
    build = svc.get("build")
    context = build if isinstance(build, str) else (build or {}).get("context")
    c.expect(context in (".", "./"), "compose: paycallback must be built from this directory")
    deps = svc.get("depends_on") or {}
    for dep in ("mysql", "redis"):
        cond = deps.get(dep, {}).get("condition") if isinstance(deps, dict) else None
        c.expect(cond == "service_healthy",
                 f"compose: paycallback must depend on {dep} with condition service_healthy")
    return mysql, svc


def check_hardening(c, svc):
    """Published on loopback by default, read-only, no capabilities, no
    privilege gain."""
    for p in svc.get("ports") or []:
        p = str(p)
        m = re.fullmatch(r"\$\{[A-Z_]+:-([^}]+)\}:(.+)", p)
        host = m.group(1) if m else (p.split(":")[0] if p.count(":") == 2 else "")
        c.expect(host == "127.0.0.1" or host.startswith("127.") or host == "[::1]",
                 f"compose: port {p} must be bound to 127.0.0.1 by default")
    c.expect(svc.get("read_only") is True, "compose: paycallback must be read_only: true")
    c.expect("ALL" in [str(x).upper() for x in svc.get("cap_drop") or []],
             "compose: paycallback must cap_drop: [ALL]")
    opts = [str(x).replace("=", ":") for x in svc.get("security_opt") or []]
    c.expect(any(o in ("no-new-privileges", "no-new-privileges:true") for o in opts),
             "compose: paycallback must set security_opt no-new-privileges:true")


def check_migrate(c, compose, mysql, svc):
    """The schema is the migrations', applied by `paycallback migrate` in a
    one-shot service of the same image that the service waits for; MySQL's
    init directory holds none of it."""
    mounts = [str(v) for v in mysql.get("volumes") or []]
    c.expect(not [m for m in mounts if m.split(":")[1:2] == [INIT_DIR]],
             f"compose: mysql must not mount SQL on {INIT_DIR}: migrate applies the schema")
    mig = (compose.get("services") or {}).get("migrate") or {}
    c.expect(bool(mig), "compose: no one-shot service migrate")
    c.expect(mig.get("image") == svc.get("image"),
             "compose: migrate must run the service's image")
    c.expect([str(x) for x in mig.get("command") or []] == ["migrate"],
             "compose: the migrate service must run `paycallback migrate`")
    c.expect(str(mig.get("restart", "no")) == "no",
             "compose: migrate runs once per `up`: restart must be \"no\"")
    deps = mig.get("depends_on") or {}
    c.expect(isinstance(deps, dict) and
             (deps.get("mysql") or {}).get("condition") == "service_healthy",
             "compose: migrate must depend on mysql with condition service_healthy")
    menv, senv = env_dict(mig.get("environment")), env_dict(svc.get("environment"))
    for name in ("PAYCALLBACK_MYSQL_HOST", "PAYCALLBACK_MYSQL_PORT"):
        c.expect(menv.get(name) == senv.get(name),
                 f"compose: migrate's {name} must be the service's")
    sdeps = svc.get("depends_on") or {}
    c.expect(isinstance(sdeps, dict) and
             (sdeps.get("migrate") or {}).get("condition") == "service_completed_successfully",
             "compose: paycallback must depend on migrate with condition "
             "service_completed_successfully")


def check_secrets(c, image_env, svc_env):
    """Secrets reach the service only from the environment of compose."""
    for name in (DEV_SWITCH,):
        c.expect(name not in image_env, f"Dockerfile: ENV sets the development switch {name}")
        c.expect(name not in svc_env, f"compose: sets the development switch {name}")
    for key, required in SECRET_KEYS.items():
        name = env_name(key)
        c.expect(name not in image_env, f"Dockerfile: ENV bakes the secret {name} into the image")
        value = svc_env.get(name)
        if required and not c.expect(value is not None,
                                     f"compose: the service must get {name} from the environment"):
            continue
        if value is None:
            continue
        form = r"\$\{" + name + (r":\?[^}]+\}" if required else r":-\}")
        c.expect(re.fullmatch(form, value) is not None,
                 f"compose: {name} must be exactly ${{{name}{':?message' if required else ':-'}}}"
                 f", not {value!r}")


def effective_config(c, shipped, image_env, svc_env):
    keys = config_keys()
    by_env = {env_name(k): k for k in keys}
    effective = dict(shipped)
    for source, env in (("Dockerfile ENV", image_env), ("compose environment", svc_env)):
        for name, value in env.items():
            if not name.startswith("PAYCALLBACK_") or name == DEV_SWITCH:
                continue
            if not c.expect(name in by_env, f"{source}: {name} is no configuration key"):
                continue
            if by_env[name] in SECRET_KEYS:
                continue                  # checked by check_secrets
            key = by_env[name]
            if keys[key] is int:
                if not c.expect(re.fullmatch(r"-?\d+", value) is not None,
                                f"{source}: {name}={value!r} is not an integer"):
                    continue
                effective[key] = int(value)
            else:
                effective[key] = value
    return effective


def check(compose_path, dockerfile_path):
    c = Checker()
    compose = yaml.safe_load(open(compose_path, encoding="utf-8"))
    if not c.expect(isinstance(compose, dict), f"{compose_path}: not a YAML mapping"):
        return c.problems
    mysql, svc = check_services(c, compose)
    check_hardening(c, svc)
    check_migrate(c, compose, mysql, svc)
    image_env, cfg_path, exposed = check_dockerfile(c, dockerfile_path)

    shipped = flatten(json.load(open(os.path.join(ROOT, "config", "paycallback.json"))))
    svc_env = env_dict(svc.get("environment"))
    check_secrets(c, image_env, svc_env)
    eff = effective_config(c, shipped, image_env, svc_env)
    changed = {k for k in set(eff) | set(shipped) if eff.get(k) != shipped.get(k)}
    c.expect(changed <= ENDPOINT_KEYS,
             f"compose: the service's config differs from the shipped one beyond the "
             f"endpoints: {sorted(changed - ENDPOINT_KEYS)}")
    c.expect(eff.get("mysql.host") == "mysql" and eff.get("mysql.port") == 3306,
             "compose: the service must reach MySQL at mysql:3306")
    c.expect(eff.get("redis.host") == "redis" and eff.get("redis.port") == 6379,
             "compose: the service must reach Redis at redis:6379")
    c.expect(eff.get("listen.address") == "0.0.0.0",
             "compose: the service must listen on 0.0.0.0 inside its container")

    menv = env_dict(mysql.get("environment"))
    for var, key in (("MYSQL_DATABASE", "mysql.database"), ("MYSQL_USER", "mysql.user")):
        c.expect(menv.get(var) == str(eff.get(key)),
                 f"compose: mysql {var}={menv.get(var)!r} but the service uses {key}={eff.get(key)!r}")
    # The account's password: MariaDB, the service and migrate all get the
    # one secret of the compose environment, never a value.
    pw = svc_env.get(env_name("mysql.password"))
    c.expect(menv.get("MYSQL_PASSWORD") == pw,
             f"compose: mysql MYSQL_PASSWORD must be the service's {env_name('mysql.password')} "
             f"({pw!r}), is {menv.get('MYSQL_PASSWORD')!r}")
    mig_env = env_dict(((compose.get("services") or {}).get("migrate") or {}).get("environment"))
    c.expect(mig_env.get(env_name("mysql.password")) == pw,
             f"compose: migrate must get the service's {env_name('mysql.password')}")

    port = str(eff.get("listen.port"))
    published = [str(p) for p in svc.get("ports") or []]
    c.expect(any(p.split(":")[-1].split("/")[0] == port for p in published),
             f"compose: the service's port {port} is not published")
    c.expect(port in exposed, f"Dockerfile: EXPOSE {port} is missing")
    grace = seconds(svc.get("stop_grace_period", "10s"))
    c.expect(grace is not None and grace > float(eff.get("grace_s", 10)),
             f"compose: stop_grace_period must exceed grace_s ({eff.get('grace_s')} s)")
    return c.problems


def self_test(compose_path, dockerfile_path):
    """Problems of the check itself: a mutation it let through, or one that
    no longer applies to the files."""
    problems = []
    paths = {"docker-compose.yml": compose_path, "Dockerfile": dockerfile_path}
    for name, old, new, breaks in MUTATIONS:
        text = open(paths[name], encoding="utf-8").read()
        if old not in text:
            problems.append(f"self-test: {name} no longer contains {old!r}: update MUTATIONS")
            continue
        with tempfile.NamedTemporaryFile("w", suffix="-" + name, encoding="utf-8") as tmp:
            tmp.write(text.replace(old, new, 1))
            tmp.flush()
            mutated = dict(paths, **{name: tmp.name})
            if not check(mutated["docker-compose.yml"], mutated["Dockerfile"]):
                problems.append(f"self-test: the check passed although {name}: {breaks}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compose", default=os.path.join(ROOT, "docker-compose.yml"))
    ap.add_argument("--dockerfile", default=os.path.join(ROOT, "Dockerfile"))
    ap.add_argument("--self-test", action="store_true",
                    help="also check that every rule of MUTATIONS is caught")
    args = ap.parse_args()
    problems = check(args.compose, args.dockerfile)
    if not problems and args.self_test:
        problems = self_test(args.compose, args.dockerfile)
    for p in problems:
        print(f"check-compose: {p}", file=sys.stderr)
    if not problems:
        print(f"check-compose: {args.compose} and {args.dockerfile} ok"
              + (f", {len(MUTATIONS)} broken copies caught" if args.self_test else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
