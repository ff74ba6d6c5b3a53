// api.js - the operator API as the console calls it: the key signed in
// with, from this tab's sessionStorage only, as a bearer token.
const KEY = 'paycallback.console.key';

export const session = {
  key: () => sessionStorage.getItem(KEY),
  set: k => sessionStorage.setItem(KEY, k),
  clear: () => sessionStorage.removeItem(KEY),
  who: null,            // {name, scopes} from GET /ops/whoami
  can: scope => !!session.who && session.who.scopes.includes(scope),
  onUnauthorized: () => {},
};

// {status, ok, body (parsed JSON or null), text}. A 401 signs the tab out:
// the key was revoked or rotated while it was open.
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${session.key() || ''}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    return { status: 0, ok: false, body: null, text: `network error: ${e.message}` };
  }
  const text = await res.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  const out = { status: res.status, ok: res.ok, body: parsed, text };
  if (res.status === 401 && path !== '/ops/whoami') session.onUnauthorized(out);
  return out;
}

// Path segments and query values are always encoded.
export const seg = s => encodeURIComponent(String(s));
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}
