#!/usr/bin/env bash
# A runnable example of each gateway route. For the kind given it generates
# a local test key (or secret), starts paycallback on a free port with a
# gateway profile for it, inserts an order waiting for payment, builds a
# notification signed (WeChat: also encrypted) the way the gateway does,
# posts it with curl and prints the acknowledgement, then posts it again to
# show that a resend is acknowledged and written once.
#
# usage: make services all && scripts/gateway-example.sh alipay|wechat|stripe
# Needs: curl, openssl, python3 with python3-cryptography (for AES-GCM).
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

kind=${1:-}
[[ $kind == alipay || $kind == wechat || $kind == stripe ]] ||
	{ echo "usage: $0 alipay|wechat|stripe" >&2; exit 2; }
BIN=${PCB_BIN:-$ROOT/build/paycallback}
[[ -x $BIN ]] || { echo "$0: $BIN not built (make all)" >&2; exit 1; }

dir=$(mktemp -d)
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

sql() {
	mariadb --no-defaults --user="$DB_USER" --password="$DB_PASSWORD" --host=127.0.0.1 \
		--port="$MYSQL_PORT" "$DB_NAME" -N -e "$1"
}

# The gateway's key pair, made here: the service gets the public half.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/gateway.key" 2>/dev/null
openssl pkey -in "$dir/gateway.key" -pubout -out "$dir/gateway.pub"
APIV3_KEY=$(openssl rand -hex 16)           # 32 characters, as WeChat's APIv3 key
STRIPE_SECRET=whsec_$(openssl rand -hex 16)
SERIAL=5157F09EFDC096DE15EBE81A47057A7232F1B8E1
APP_ID=2021000000000001
MCHID=1230000109

# The shipped config plus one profile of each kind.
python3 - "$ROOT/config/paycallback.json" "$dir/gateway.pub" >"$dir/config.json" <<PY
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["listen"]["port"] = 0
cfg["gateways"] = [
    {"name": "alipay", "kind": "alipay", "app_id": "$APP_ID", "public_key_file": sys.argv[2]},
    {"name": "wechat", "kind": "wechatpay_v3", "mchid": "$MCHID", "secret_env": "EXAMPLE_APIV3_KEY",
     "platform_keys": [{"serial": "$SERIAL", "public_key_file": sys.argv[2]}]},
    {"name": "stripe", "kind": "stripe", "secret_env": "EXAMPLE_STRIPE_SECRET"},
]
json.dump(cfg, sys.stdout, indent=1)
PY

PAYCALLBACK_DEV=1 EXAMPLE_APIV3_KEY=$APIV3_KEY EXAMPLE_STRIPE_SECRET=$STRIPE_SECRET \
	PAYCALLBACK_MYSQL_PORT=$MYSQL_PORT PAYCALLBACK_REDIS_PORT=$REDIS_PORT \
	"$BIN" -c "$dir/config.json" --port-file "$dir/port" 2>"$dir/server.log" &
pid=$!
for _ in $(seq 100); do [[ -s $dir/port ]] && break; sleep 0.1; done
[[ -s $dir/port ]] || { cat "$dir/server.log" >&2; exit 1; }
URL=http://127.0.0.1:$(cat "$dir/port")/pay/callback/$kind

order=EX-$kind-$(date +%s)
currency=CNY; [[ $kind == stripe ]] && currency=USD
sql "INSERT INTO orders (order_no, user_id, request_id, sku, quantity, amount, currency, status)
     VALUES ('$order', 'example', '$order', 'SHOE-42', 1, 899.00, '$currency', 1)"
echo "order $order: 899.00 $currency, WAIT_PAY"
TRADE_NO=2024${order##*-}0001               # the gateway's payment id, the same on a resend

post() {
	case $kind in
	alipay)
		# Every field but sign and sign_type, sorted, k=v joined by &, RSA2.
		local -a f=(app_id="$APP_ID" charset=utf-8 notify_id=example notify_time="$(date '+%F %T')"
			notify_type=trade_status_sync out_trade_no="$order" total_amount=899.00
			trade_no="$TRADE_NO" trade_status=TRADE_SUCCESS version=1.0)
		local content sign args=() kv
		content=$(printf '%s\n' "${f[@]}" | LC_ALL=C sort -t= -k1,1 | paste -sd '&')
		sign=$(printf '%s' "$content" | openssl dgst -sha256 -sign "$dir/gateway.key" | base64 -w0)
		for kv in "${f[@]}" sign_type=RSA2 "sign=$sign"; do args+=(--data-urlencode "$kv"); done
		curl -sS -i "${args[@]}" "$URL"
		;;
	wechat)
		# The transaction encrypted with AEAD_AES_256_GCM under the APIv3 key,
		# then timestamp\nnonce\nbody\n signed with the platform key.
		local body ts nonce sig
		body=$(python3 - "$APIV3_KEY" "$order" "$MCHID" <<'PY'
import base64, json, os, sys
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
key, order, mchid = sys.argv[1].encode(), sys.argv[2], sys.argv[3]
tx = {"mchid": mchid, "appid": "wxd678efh567hg6787", "out_trade_no": order,
      "transaction_id": "4200000000" + order.split("-")[-1], "trade_type": "NATIVE",
      "trade_state": "SUCCESS", "amount": {"total": 89900, "currency": "CNY"}}
nonce = base64.b16encode(os.urandom(6)).decode()
ct = AESGCM(key).encrypt(nonce.encode(), json.dumps(tx).encode(), b"transaction")
print(json.dumps({"id": "EV-1", "event_type": "TRANSACTION.SUCCESS",
                  "resource_type": "encrypt-resource",
                  "resource": {"algorithm": "AEAD_AES_256_GCM", "original_type": "transaction",
                               "ciphertext": base64.b64encode(ct).decode(),
                               "associated_data": "transaction", "nonce": nonce}},
                 separators=(",", ":")))
PY
)
		ts=$(date +%s)
		nonce=$(openssl rand -hex 16)
		sig=$(printf '%s\n%s\n%s\n' "$ts" "$nonce" "$body" |
			openssl dgst -sha256 -sign "$dir/gateway.key" | base64 -w0)
		curl -sS -i -H 'Content-Type: application/json' -H "Wechatpay-Timestamp: $ts" \
			-H "Wechatpay-Nonce: $nonce" -H "Wechatpay-Signature: $sig" \
			-H "Wechatpay-Serial: $SERIAL" --data-binary "$body" "$URL"
		;;
	stripe)
		# HMAC-SHA256 of t.body with the endpoint secret.
		local body t v1
		body='{"id":"evt_example","type":"payment_intent.succeeded","data":{"object":{"id":"pi_'"${order//-/_}"'","object":"payment_intent","amount":89900,"amount_received":89900,"currency":"usd","metadata":{"order_no":"'"$order"'"}}}}'
		t=$(date +%s)
		v1=$(printf '%s.%s' "$t" "$body" | openssl dgst -sha256 -hmac "$STRIPE_SECRET" | awk '{print $2}')
		curl -sS -i -H 'Content-Type: application/json' -H "Stripe-Signature: t=$t,v1=$v1" \
			--data-binary "$body" "$URL"
		;;
	esac
}

echo "--- POST /pay/callback/$kind"
post | tr -d '\r'
echo
echo "--- the same notification again (a gateway resend)"
post | tr -d '\r' | head -1
echo
echo "order status: $(sql "SELECT status FROM orders WHERE order_no = '$order'") (2 = PAID);" \
	"payment records: $(sql "SELECT COUNT(*) FROM payment_record WHERE order_no = '$order'")"
