/*
 * The way back after a fresh sign-in (docs/admin.md, "Erasure needs a fresh sign-in"): before the
 * console sends the operator to sign in again, it notes the person's page and the act in this
 * tab's sessionStorage; once signed in, it goes back there and opens the act again. Only a
 * console hash path of a person's page (#/people/<uuid>) and a known act are ever followed, and
 * only for ten minutes: nothing the address bar or another site says is a place to go.
 */

const KEY = 'console-return';
const TTL_MS = 10 * 60 * 1000;
const PERSON = /^#\/people\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ACTS = ['erase'] as const;
export type ResumableAct = (typeof ACTS)[number];

export interface Return {
  hash: string;
  act: ResumableAct;
}

/** Notes the person's page and the act to come back to after the sign-in. */
export function rememberReturn(personId: string, act: ResumableAct): void {
  sessionStorage.setItem(KEY, JSON.stringify({ hash: `#/people/${personId}`, act, at: Date.now() }));
}

/** The noted return, once (it is forgotten as it is read); null if none, stale or not a console place. */
export function takeReturn(): Return | null {
  const raw = sessionStorage.getItem(KEY);
  sessionStorage.removeItem(KEY);
  if (!raw) return null;
  try {
    const r = JSON.parse(raw) as { hash?: unknown; act?: unknown; at?: unknown };
    if (typeof r.hash !== 'string' || !PERSON.test(r.hash)) return null;
    if (!ACTS.includes(r.act as ResumableAct)) return null;
    if (typeof r.at !== 'number' || Date.now() - r.at > TTL_MS || r.at > Date.now()) return null;
    return { hash: r.hash, act: r.act as ResumableAct };
  } catch {
    return null;
  }
}
