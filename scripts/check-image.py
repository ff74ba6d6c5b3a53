#!/usr/bin/env python3
"""make test-image: the Dockerfile builds an image whose binary runs.

With a Docker engine (`docker info` answers): builds the stack with
`docker compose up --build --wait` on generated secrets, asks /readyz and
`--check-config` of the running image, then `docker compose down -v`.

Without one (this is what runs on a machine with only the docker client, or
none): the Dockerfile's own instructions, executed in clean Debian 12 roots.
Each stage's FROM is a fresh `mmdebstrap --variant=minbase bookworm` root
(unpacked from the one scripts/debian-root.sh makes once, apt lists removed),
its RUN instructions run as written with /bin/sh -c in that root (chroot,
the host's network), COPY copies from the tree (or, --from, another stage's
root), WORKDIR, ENV and USER apply as Docker applies them. The root of each
stage after its RUN instructions that precede any COPY (the apt-get steps)
is cached under var/image-root/, keyed by those instructions, so a second
run only copies and compiles. Then the runtime stage's ENTRYPOINT runs as
its USER with its ENV: --version, and --check-config against the private
MariaDB and Redis of this tree (make services) with generated secrets,
which must pass. What this does not prove: the official images are not
byte for byte a minbase root, and nothing is pulled, so the pinned tags
themselves are not resolved here.

usage: check-image.py        root; Ends with "N passed, M failed".
"""
import hashlib
import importlib.util
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("check_compose",
                                              os.path.join(ROOT, "scripts", "check-compose.py"))
check_compose = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_compose)

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MYSQL_PORT = os.environ.get("PAYCALLBACK_MYSQL_PORT", "3307")
REDIS_PORT = os.environ.get("PAYCALLBACK_REDIS_PORT", "6380")
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"check-image: FAILED: {what}", file=sys.stderr)
    return ok


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def docker_engine():
    return shutil.which("docker") and run(["docker", "info"]).returncode == 0


def with_engine():
    env = dict(os.environ, PAYCALLBACK_CALLBACK_SECRET=secrets.token_hex(32),
               PAYCALLBACK_AUTH_KEYS="ops:" + secrets.token_hex(32),
               PAYCALLBACK_MYSQL_PASSWORD=secrets.token_hex(16))
    up = run(["docker", "compose", "up", "--build", "--wait", "-d"], cwd=ROOT, env=env)
    try:
        if check(up.returncode == 0, f"docker compose up: {up.stderr[-2000:]}"):
            r = run(["curl", "-fsS", "http://127.0.0.1:8080/readyz"])
            check(r.returncode == 0 and '"status":"ready"' in r.stdout, f"/readyz: {r.stdout}")
            r = run(["docker", "compose", "run", "--rm", "paycallback", "--check-config"],
                    cwd=ROOT, env=env)
            check(r.returncode == 0, f"--check-config in the image: {r.stdout}{r.stderr}")
    finally:
        run(["docker", "compose", "down", "-v"], cwd=ROOT, env=env)


def in_root(root, command, workdir="/", env=None, user=None):
    """command (a /bin/sh -c string, as Docker's RUN) in root, with /dev,
    /proc and the host's resolver, in a mount namespace of its own."""
    envs = " ".join(shlex.quote(f"{k}={v}") for k, v in (env or {}).items())
    spec = f"--userspec={user} " if user else ""
    inner = (f"mount --rbind /dev {root}/dev && mount -t proc proc {root}/proc && "
             f"cp /etc/resolv.conf {root}/etc/resolv.conf && "
             f"exec chroot {spec}{root} /usr/bin/env -i PATH={PATH} HOME=/root {envs} "
             f"/bin/sh -c {shlex.quote('cd ' + shlex.quote(workdir) + ' && ' + command)}")
    return run(["unshare", "--mount", "--propagation", "private", "--fork", "sh", "-c", inner])


def minbase_root(root):
    """root as `mmdebstrap --variant=minbase bookworm` makes it: the root of
    scripts/debian-root.sh (made once, shared with make test-install)
    without the apt lists it keeps."""
    r = subprocess.run([os.path.join(ROOT, "scripts", "debian-root.sh")], stdout=subprocess.PIPE,
                       text=True)
    if not check(r.returncode == 0, "scripts/debian-root.sh failed"):
        return False
    r = run(["tar", "--numeric-owner", "-C", root, "-xf", r.stdout.strip()])
    if not check(r.returncode == 0, f"unpacking the minbase root: {r.stderr}"):
        return False
    lists = os.path.join(root, "var", "lib", "apt", "lists")
    for f in os.listdir(lists):
        if f != "lock" and os.path.isfile(os.path.join(lists, f)):
            os.remove(os.path.join(lists, f))
    return True


def make_root(image, pre_runs, cache_dir, tmp, name):
    """A stage's root: minbase bookworm with its first RUN instructions, cached."""
    key = hashlib.sha256("\n".join([image] + pre_runs).encode()).hexdigest()[:16]
    cache = os.path.join(cache_dir, f"{key}.tar")
    root = os.path.join(tmp, name)
    os.makedirs(root)
    if not os.path.exists(cache):
        print(f"check-image: {name}: minbase bookworm for {image}, then its apt steps "
              f"(once; cached in {cache})", flush=True)
        os.makedirs(cache_dir, exist_ok=True)
        if not minbase_root(root):
            return None
        for cmd in pre_runs:
            r = in_root(root, cmd, env={"DEBIAN_FRONTEND": "noninteractive"})
            if not check(r.returncode == 0, f"{name}: RUN {cmd[:80]}: {(r.stdout + r.stderr)[-2000:]}"):
                return None
        r = run(["tar", "-C", root, "-cf", cache + ".part", "."])
        if not check(r.returncode == 0, f"caching the root: {r.stderr}"):
            return None
        os.replace(cache + ".part", cache)
    else:
        r = run(["tar", "-C", root, "-xf", cache])
        if not check(r.returncode == 0, f"unpacking {cache}: {r.stderr}"):
            return None
    return root


def without_engine():
    stages = check_compose.parse_dockerfile(os.path.join(ROOT, "Dockerfile"))
    tmp = tempfile.mkdtemp(prefix="pcb-image.")
    roots, names = [], {}
    final = {}
    try:
        for i, stage in enumerate(stages):
            words = stage[0][1].split()
            image = words[0]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(i)
            if not check(re.fullmatch(r"debian:12(\.\d+)?(-slim)?(@sha256:[0-9a-f]{64})?", image),
                         f"stage {name}: FROM {image} is not a Debian 12 image this check can make"):
                return
            first_copy = next((j for j, (w, _) in enumerate(stage) if w == "COPY"), len(stage))
            pre = [a for w, a in stage[1:first_copy] if w == "RUN"]
            root = make_root(image, pre, os.path.join(ROOT, "var", "image-root"), tmp, f"stage-{name}")
            if root is None:
                return
            roots.append(root)
            names[name] = root
            workdir, env, user, entry = "/", {"DEBIAN_FRONTEND": "noninteractive"}, None, None
            done_pre = 0
            for word, args in stage[1:]:
                if word == "RUN" and done_pre < len(pre) and args == pre[done_pre]:
                    done_pre += 1          # already in the (cached) root
                    continue
                if word == "WORKDIR":
                    workdir = os.path.join(workdir, args)
                    os.makedirs(root + workdir, exist_ok=True)
                elif word == "ENV":
                    for item in shlex.split(args):
                        k, _, v = item.partition("=")
                        env[k] = v
                elif word == "COPY":
                    parts = shlex.split(args)
                    src_root = ROOT
                    if parts[0].startswith("--from="):
                        src_root = names[parts[0].split("=", 1)[1]]
                        parts = parts[1:]
                    *srcs, dst = parts
                    dst = dst if dst.startswith("/") else os.path.join(workdir, dst)
                    for src in srcs:
                        s = os.path.join(src_root, src.lstrip("/"))
                        d = root + dst
                        if os.path.isdir(s):
                            os.makedirs(d, exist_ok=True)
                            r = run(["cp", "-a", s.rstrip("/") + "/.", d])
                        else:
                            os.makedirs(d if dst.endswith("/") else os.path.dirname(d), exist_ok=True)
                            r = run(["cp", "-a", s, d])
                        if not check(r.returncode == 0, f"COPY {src} {dst}: {r.stderr}"):
                            return
                elif word == "RUN":
                    print(f"check-image: stage {name}: RUN {args[:70]}")
                    r = in_root(root, args, workdir, env)
                    if not check(r.returncode == 0, f"stage {name}: RUN {args[:80]}: "
                                 f"{(r.stdout + r.stderr)[-3000:]}"):
                        return
                elif word == "USER":
                    user = args
                elif word == "ENTRYPOINT":
                    entry = args
            final = {"root": root, "env": env, "user": user, "entry": entry}
        check_runtime(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def uid_of(root, spec):
    """user[:group] as uid:gid from the root's own passwd and group files."""
    user, _, group = spec.partition(":")
    ids = {}
    for f, name in (("passwd", user), ("group", group or user)):
        for line in open(os.path.join(root, "etc", f), encoding="utf-8"):
            p = line.split(":")
            if p[0] == name:
                ids[f] = p[2]
    return f"{ids.get('passwd', user)}:{ids.get('group', group or user)}"


def check_runtime(final):
    root, entry = final["root"], final["entry"]
    import json
    argv = json.loads(entry) if entry and entry.startswith("[") else shlex.split(entry or "")
    if not check(bool(argv), "the runtime stage has no ENTRYPOINT"):
        return
    user = uid_of(root, final["user"]) if final["user"] else None
    check(user is None or not user.startswith("0:"), f"the image runs as root ({user})")
    cmd = " ".join(shlex.quote(a) for a in argv)
    r = in_root(root, cmd + " --version", env=final["env"], user=user)
    check(r.returncode == 0 and r.stdout.startswith("paycallback "),
          f"--version in the runtime root: {r.stdout}{r.stderr}")
    env = dict(final["env"], PAYCALLBACK_MYSQL_HOST="127.0.0.1", PAYCALLBACK_MYSQL_PORT=MYSQL_PORT,
               PAYCALLBACK_REDIS_HOST="127.0.0.1", PAYCALLBACK_REDIS_PORT=REDIS_PORT,
               PAYCALLBACK_CALLBACK_SECRET=secrets.token_hex(32),
               # as the compose file does: every secret in the environment, so the
               # image's world-readable file holds none in force
               PAYCALLBACK_MYSQL_PASSWORD="paycallback",  # the private MariaDB's
               PAYCALLBACK_AUTH_KEYS="ops:" + secrets.token_hex(32))
    r = in_root(root, cmd + " --check-config", env=env, user=user)
    out = r.stdout + r.stderr
    check(r.returncode == 0 and "is valid" in out,
          f"--check-config in the runtime root (exit {r.returncode}): {out}")
    print(out.strip())


def main():
    if docker_engine():
        print("check-image: a Docker engine answers: docker compose up --build")
        with_engine()
    else:
        if os.geteuid() != 0 or not shutil.which("mmdebstrap"):
            sys.exit("check-image: no Docker engine; the fallback needs root and mmdebstrap "
                     "(apt-get install mmdebstrap)")
        print("check-image: no Docker engine here: the Dockerfile's steps in clean Debian 12 "
              "roots (mmdebstrap)")
        without_engine()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
