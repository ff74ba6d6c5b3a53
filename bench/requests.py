#!/usr/bin/env python3
"""Writes request lines for bench/requests.lua: path, headers, body, tab-separated.

usage: requests.py callbacks FIRST COUNT SECRET
           signed callbacks: order BENCH-i paid with pay_no BPAY-i, 899.00, for
           i in FIRST .. FIRST+COUNT-1 (HMAC-SHA256 over timestamp "." body)
       requests.py stripe FIRST COUNT SECRET
           the same payments as Stripe payment_intent.succeeded events (pay_no the
           intent's id, 89900 minor units of cny), for POST /pay/callback/stripe,
           signed as Stripe signs (Stripe-Signature: t=ts,v1=HMAC-SHA256 over ts "." body)
       requests.py orders FIRST COUNT
           order creations, each with its own token TOKEN-i (32 hex digits) and
           request_id; the tokens go to Redis through redis-tokens
       requests.py redis-tokens FIRST COUNT TTL_S
           the Redis commands (RESP) that store those tokens, for redis-cli --pipe"""
import hashlib, hmac, sys, time


def token(i):
    return "%032x" % (0xbe0c0000000000000000000000000000 + i)


def resp(*args):
    out = ["*%d\r\n" % len(args)]
    for a in args:
        out.append("$%d\r\n%s\r\n" % (len(a.encode()), a))
    return "".join(out)


def main():
    kind, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    out = sys.stdout
    ts = str(int(time.time()))
    for i in range(first, first + count):
        if kind == "callbacks":
            body = '{"order_no":"BENCH-%d","pay_no":"BPAY-%d","amount":"899.00"}' % (i, i)
            sig = hmac.new(sys.argv[4].encode(), (ts + "." + body).encode(),
                           hashlib.sha256).hexdigest()
            out.write("/pay/callback\tX-Timestamp=%s;X-Signature=%s\t%s\n" % (ts, sig, body))
        elif kind == "stripe":
            body = ('{"id":"evt_%d","object":"event","type":"payment_intent.succeeded",'
                    '"data":{"object":{"id":"BPAY-%d","object":"payment_intent","amount":89900,'
                    '"amount_received":89900,"currency":"cny","status":"succeeded",'
                    '"metadata":{"order_no":"BENCH-%d"}}}}' % (i, i, i))
            sig = hmac.new(sys.argv[4].encode(), (ts + "." + body).encode(),
                           hashlib.sha256).hexdigest()
            out.write("/pay/callback/stripe\tStripe-Signature=t=%s,v1=%s\t%s\n" % (ts, sig, body))
        elif kind == "orders":
            body = ('{"user_id":"bench","request_id":"breq-%d","sku":"BENCH-SKU","quantity":1}'
                    % i)
            out.write("/order/create\tIdempotent-Token=%s\t%s\n" % (token(i), body))
        elif kind == "redis-tokens":
            out.write(resp("SET", "idem:token:" + token(i), "1", "EX", sys.argv[4]))
        else:
            sys.exit("unknown kind " + kind)


main()
