#!/usr/bin/env node
// webhook_receiver.js - a shop's webhook endpoints for the delivery tests.
//
// Every delivery is verified the way a shop verifies it: with the official
// `standardwebhooks` package from npm (pinned in tests/tools/webhook-verify/
// package-lock.json), never with our own code. Deliveries in the legacy
// format (X-Timestamp, X-Signature) are checked with node's HMAC.
//
// Listens on 127.0.0.1 (port 0 = any free port, written to --port-file);
// every path is an endpoint (/a, /b, /hook ...). Appends one JSON line per
// attempt to --log:
//   {"path": "/a", "key": <webhook-id>, "type": ..., "order_no": ..., "ts": ...,
//    "sig_ok": true, "sig_by": [true, false], "schema_ok": true, "legacy": false,
//    "dup": false, "answer": 200, "t": 1700000000.123, "body": <the JSON body>}
// sig_by[i] says whether the i-th --secret (repeatable; whsec_... for the
// standard format, anything for the legacy one) verifies the delivery on its
// own; sig_ok is their "or". schema_ok: the body matches the schema that
// docs/openapi.yaml's webhooks section gives its type (false for a type it
// does not describe; the error goes to stderr). dup: this path answered 200
// to this id before.
//
// How a path answers is switched at run time: POST /_mode/<path> (or /_mode
// for every path without its own mode) with a body of
//   200 | 500 | hang | close | slow:<ms>
// GET /_stats returns {"attempts": n, "unique": n}.
'use strict';

const fs = require('fs');
const http = require('http');
const crypto = require('crypto');
const path = require('path');
const modules = path.join(__dirname, 'webhook-verify', 'node_modules');
const { Webhook } = require(path.join(modules, 'standardwebhooks'));
const yaml = require(path.join(modules, 'js-yaml'));

/* The contract: docs/openapi.yaml, its webhooks section by event type. */
const api = yaml.load(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'openapi.yaml'), 'utf8'));

function resolve(schema) {
    while (schema && schema.$ref) {
        schema = schema.$ref.replace(/^#\//, '').split('/').reduce((o, k) => o[k], api);
    }
    return schema;
}

/* The JSON Schema keywords the contract uses; returns a list of errors. */
function check(schema, v, where) {
    schema = resolve(schema);
    const errs = [];
    if (!schema) return errs;
    const type = (x) => (x === null ? 'null' : Array.isArray(x) ? 'array'
        : typeof x === 'number' ? (Number.isInteger(x) ? 'integer' : 'number') : typeof x);
    if (schema.allOf) for (const s of schema.allOf) errs.push(...check(s, v, where));
    if (schema.oneOf && schema.oneOf.filter((s) => check(s, v, where).length === 0).length !== 1)
        errs.push(`${where}: not exactly one of oneOf`);
    if (schema.type) {
        const types = [].concat(schema.type);
        const t = type(v);
        if (!types.includes(t) && !(t === 'integer' && types.includes('number')))
            errs.push(`${where}: ${t}, not ${types.join('|')}`);
    }
    if (schema.enum && !schema.enum.includes(v)) errs.push(`${where}: ${JSON.stringify(v)} not in enum`);
    if ('const' in schema && schema.const !== v) errs.push(`${where}: not ${schema.const}`);
    if (schema.pattern && typeof v === 'string' && !new RegExp(schema.pattern).test(v))
        errs.push(`${where}: ${v} does not match ${schema.pattern}`);
    if (schema.minLength !== undefined && typeof v === 'string' && v.length < schema.minLength)
        errs.push(`${where}: too short`);
    if (schema.maxLength !== undefined && typeof v === 'string' && v.length > schema.maxLength)
        errs.push(`${where}: too long`);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        for (const k of schema.required || [])
            if (!(k in v)) errs.push(`${where}: ${k} missing`);
        for (const [k, s] of Object.entries(schema.properties || {}))
            if (k in v) errs.push(...check(s, v[k], `${where}.${k}`));
    }
    return errs;
}

function schemaOk(ev) {
    const hook = api.webhooks && api.webhooks[ev.type];
    if (!hook) {
        process.stderr.write(`webhook_receiver: no webhooks schema for type ${ev.type}\n`);
        return false;
    }
    const errs = check(hook.post.requestBody.content['application/json'].schema, ev, 'body');
    if (errs.length) process.stderr.write(`webhook_receiver: ${ev.id}: ${errs.join('; ')}\n`);
    return errs.length === 0;
}

function args() {
    const a = { port: 0, secrets: [] };
    const v = process.argv.slice(2);
    for (let i = 0; i < v.length; i += 2) {
        if (v[i] === '--port') a.port = Number(v[i + 1]);
        else if (v[i] === '--port-file') a.portFile = v[i + 1];
        else if (v[i] === '--log') a.log = v[i + 1];
        else if (v[i] === '--secret') a.secrets.push(v[i + 1]);
        else throw new Error('unknown argument ' + v[i]);
    }
    if (!a.portFile || !a.log || a.secrets.length === 0)
        throw new Error('usage: --port-file F --log F --secret S [--secret S2] [--port N]');
    return a;
}

const opt = args();
const log = fs.openSync(opt.log, 'a');
const verifiers = opt.secrets.map((s) => {
    try {
        return new Webhook(s);
    } catch (e) {
        return null; /* not a whsec_ secret: legacy only */
    }
});
const modes = new Map(); /* path -> mode; '' is the default */
modes.set('', '200');
const seen = new Map(); /* path -> Set of ids answered 200 */
let attempts = 0;
const hanging = [];

function legacyOk(secret, ts, sig, body) {
    if (!ts || !sig) return false;
    const want = crypto.createHmac('sha256', secret).update(ts + '.').update(body).digest('hex');
    return want.length === sig.length && crypto.timingSafeEqual(Buffer.from(want), Buffer.from(sig));
}

function verify(req, body) {
    const legacy = req.headers['webhook-signature'] === undefined;
    const by = opt.secrets.map((s, i) => {
        if (legacy) return legacyOk(s, req.headers['x-timestamp'], req.headers['x-signature'], body);
        if (verifiers[i] === null) return false;
        try {
            verifiers[i].verify(body, req.headers);
            return true;
        } catch (e) {
            return false;
        }
    });
    return { legacy, by };
}

/* JSON as Python's json.dumps writes it (", " and ": "), which the
 * suites' line matching expects. */
function dumps(v) {
    if (Array.isArray(v)) return '[' + v.map(dumps).join(', ') + ']';
    if (v !== null && typeof v === 'object')
        return '{' + Object.keys(v).filter((k) => v[k] !== undefined)
            .map((k) => JSON.stringify(k) + ': ' + dumps(v[k])).join(', ') + '}';
    return JSON.stringify(v);
}

function reply(res, code, body) {
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
}

const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
        const body = Buffer.concat(chunks);
        const url = req.url;
        if (req.method === 'GET' && url === '/_stats') {
            let unique = 0;
            for (const s of seen.values()) unique += s.size;
            return reply(res, 200, JSON.stringify({ attempts, unique }));
        }
        if (req.method === 'POST' && (url === '/_mode' || url.startsWith('/_mode/'))) {
            const p = url === '/_mode' ? '' : url.substring('/_mode'.length);
            modes.set(p, body.toString().trim());
            return reply(res, 200, '{}');
        }
        const mode = modes.has(url) ? modes.get(url) : modes.get('');
        const { legacy, by } = verify(req, body);
        const key = legacy ? req.headers['idempotency-key'] || '' : req.headers['webhook-id'] || '';
        let ev = {};
        try {
            ev = JSON.parse(body.toString());
        } catch (e) {
            ev = {};
        }
        const answer = mode === '500' ? 500 : mode === '200' || mode.startsWith('slow:') ? 200 : 0;
        if (!seen.has(url)) seen.set(url, new Set());
        const dup = seen.get(url).has(key);
        if (answer === 200) seen.get(url).add(key);
        attempts++;
        const line = {
            path: url, key, type: ev.type, order_no: ev.order_no,
            ts: req.headers['webhook-timestamp'] || req.headers['x-timestamp'],
            sig_ok: by.some((x) => x), sig_by: by, schema_ok: schemaOk(ev), legacy, dup, answer,
            t: Date.now() / 1000, body: ev,
        };
        fs.writeSync(log, dumps(line) + '\n');
        if (mode === 'hang') {
            hanging.push(res);
            return;
        }
        if (mode === 'close') {
            req.socket.destroy();
            return;
        }
        if (mode.startsWith('slow:')) {
            setTimeout(() => reply(res, 200, '{"ok":true}'), Number(mode.substring(5)));
            return;
        }
        reply(res, answer, answer === 200 ? '{"ok":true}' : '{"ok":false}');
    });
});
server.keepAliveTimeout = 60000;
server.listen(opt.port, '127.0.0.1', () => {
    fs.writeFileSync(opt.portFile + '.tmp', String(server.address().port));
    fs.renameSync(opt.portFile + '.tmp', opt.portFile);
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
