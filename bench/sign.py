#!/usr/bin/env python3
"""Writes N signed callback requests, one per line: timestamp, signature, body.
usage: sign.py N ORDER_PREFIX PAY_PREFIX SECRET  (order i pays with pay_no PAY_PREFIXi)"""
import hashlib, hmac, sys, time

n, order_prefix, pay_prefix, secret = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].encode()
ts = str(int(time.time()))
out = sys.stdout
for i in range(1, n + 1):
    body = '{"order_no":"%s%d","pay_no":"%s%d","amount":"899.00"}' % (order_prefix, i, pay_prefix, i)
    sig = hmac.new(secret, (ts + "." + body).encode(), hashlib.sha256).hexdigest()
    out.write("%s\t%s\t%s\n" % (ts, sig, body))
