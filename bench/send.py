#!/usr/bin/env python3
"""Sends every request of a bench/requests.py file once, over CONNS keep-alive
connections, and fails unless each is answered 200. The duplicate storms use
it to record their payments through the service itself, as first callbacks,
so the service has answered each once before the storm repeats them.

usage: send.py URL FILE [CONNS]"""
import http.client
import sys
import threading
import urllib.parse


def send_all(host, port, lines, failures):
    try:
        send_lines(host, port, lines, failures)
    except (OSError, http.client.HTTPException) as e:
        failures.append("%s:%s %s" % (host, port, e))


def send_lines(host, port, lines, failures):
    conn = http.client.HTTPConnection(host, port, timeout=30)
    for line in lines:
        path, hdrs, body = line.rstrip("\n").split("\t", 2)
        headers = {"Content-Type": "application/json"}
        for kv in filter(None, hdrs.split(";")):
            k, v = kv.split("=", 1)
            headers[k] = v
        conn.request("POST", path, body.encode(), headers)
        r = conn.getresponse()
        text = r.read()
        if r.status != 200:
            failures.append("%s %d %s" % (path, r.status, text[:200].decode(errors="replace")))
    conn.close()


def main():
    url = urllib.parse.urlsplit(sys.argv[1])
    conns = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    lines = open(sys.argv[2]).readlines()
    failures = []
    threads = [threading.Thread(target=send_all,
                                args=(url.hostname, url.port, lines[i::conns], failures))
               for i in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures or not lines:
        sys.exit("send.py: %d of %d requests failed, first: %s"
                 % (len(failures), len(lines), failures[0] if failures else "no requests"))


main()
