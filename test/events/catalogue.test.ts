import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EMITTED, EVENT_TYPES } from '../../src/features/events/catalogue.js';

// docs/events.md lists every type of the catalogue, and says which are emitted now, as the code does.
const doc = readFileSync(new URL('../../docs/events.md', import.meta.url), 'utf8');

/** The catalogue table's rows: each type it names (`a.b`, `.c` shorthand expanded) with its "Emitted now". */
function rows(): Map<string, boolean> {
  const found = new Map<string, boolean>();
  for (const line of doc.split('\n')) {
    const m = /^\| (`[^|]+`) \| (yes|no) \|/.exec(line);
    if (!m) continue;
    const names = [...m[1].matchAll(/`([^`]+)`/g)].map((x) => x[1]);
    const first = names[0];
    for (const name of names) {
      const full = name.startsWith('.') ? first.slice(0, first.lastIndexOf('.')) + name : name;
      found.set(full, m[2] === 'yes');
    }
  }
  return found;
}

describe('docs/events.md', () => {
  it('names every type, each marked emitted exactly when the code emits it', () => {
    const documented = rows();
    expect([...documented.keys()].sort()).toEqual([...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) expect(documented.get(type), type).toBe(EMITTED.has(type));
  });
});
