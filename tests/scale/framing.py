#!/usr/bin/python3
"""framing.py - request framings two HTTP parsers could read differently,
sent raw to HAProxy in front of the instances.

usage: framing.py HOST PORT CASE      (CASE: one of the names below, or "list")

Each case names what must happen: "proxy" - HAProxy refuses it itself (a
4xx without the X-Request-Id every instance's answer carries) and closes
the connection, so no instance ever reads it; "normalized" - HAProxy
rewrites it into one unambiguous request (a folded line unfolded, a
Content-Length dropped for Transfer-Encoding, bare LF line ends): one
instance answers it once, and whatever followed it on the connection is
never answered as a request of its own; "service" - HAProxy passes it and
the instance refuses it 400 BAD_REQUEST. Exit 0 when the case held;
prints what came back."""
import socket
import sys

SMUGGLED = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
CASES = {
    "te-space-before-colon": ("proxy", b"POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
                              b"Transfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n"
                              b"0\r\n\r\n" + SMUGGLED),
    "tab-in-name": ("proxy", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A\t: v\r\n\r\n"),
    "folded-content-length": ("proxy", b"POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
                              b"Content-Length: 1\r\n 0\r\n\r\n0123456789"),
    "folded-transfer-encoding": ("proxy", b"POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
                                 b"Transfer-Encoding: gzip,\r\n chunked\r\n\r\n0\r\n\r\n"
                                 + SMUGGLED),
    "bare-cr-in-value": ("proxy", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n"),
    "nul-in-content-length": ("proxy", b"POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
                              b"Content-Length: 3\x00 9\r\n\r\nabc"),
    "nul-in-transfer-encoding": ("proxy", b"POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
                                 b"Transfer-Encoding: chunked\x00x\r\n\r\n0\r\n\r\n"),
    "malformed-content-length": ("proxy", b"POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
                                 b"Content-Length: 1x\r\n\r\nab"),
    "two-content-lengths": ("proxy", b"POST /pay/callback HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
    "folded-other-header": ("normalized", b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                            b"X-A: one\r\n\ttwo\r\n\r\n"),
    "content-length-and-chunked": ("normalized", b"POST /healthz HTTP/1.1\r\nHost: x\r\n"
                                   b"Content-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   b"0\r\n\r\n"),
    "bare-lf-line-ends": ("normalized", b"GET /healthz HTTP/1.1\nHost: x\n\n"),
    "control-byte-in-value": ("service", b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                              b"X-A: a\x01b\r\nConnection: close\r\n\r\n"),
}


def exchange(host, port, raw):
    """Sends raw, reads until the peer closes or 3 s of silence: (bytes, closed)."""
    s = socket.create_connection((host, port), timeout=5)
    s.settimeout(3)
    s.sendall(raw)
    out, closed = b"", False
    try:
        while True:
            d = s.recv(65536)
            if not d:
                closed = True
                break
            out += d
    except socket.timeout:
        pass
    except OSError:
        closed = True
    s.close()
    return out, closed


def main(argv):
    if len(argv) != 4 or (argv[3] not in CASES and argv[3] != "list"):
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    if argv[3] == "list":
        print("\n".join(CASES))
        return 0
    want, raw = CASES[argv[3]]
    out, closed = exchange(argv[1], int(argv[2]), raw)
    answers = out.count(b"HTTP/1.1 ")
    head = out.split(b"\r\n\r\n", 1)[0].lower()
    status = int(out[9:12]) if out.startswith(b"HTTP/1.") and out[9:12].isdigit() else 0
    from_instance = b"\r\nx-request-id:" in head
    print(f"  {argv[3]}: {status} from {'an instance' if from_instance else 'the proxy'}, "
          f"{answers} answer(s), connection {'closed' if closed else 'open'}")
    if want == "proxy":
        ok = 400 <= status < 500 and not from_instance and answers == 1 and closed
    elif want == "normalized":
        ok = from_instance and answers == 1 and status < 500
    else:
        ok = status == 400 and from_instance and b'"code":"BAD_REQUEST"' in out and answers == 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
