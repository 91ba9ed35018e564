// The import rules dpdm cannot see (it checks files; these are about folders), run by npm run lint:
//   - src/platform imports no feature, nor the wiring (src/app.ts, src/context.ts); only
//     src/config.ts, which imports nothing of the service, sits beside it;
//   - the feature folders import each other without a cycle (sessions -> second-factors ->
//     sessions would be one, even when no single file closes the loop).
// Exits 1 with one line per breach.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const SRC = new URL('../src/', import.meta.url).pathname;
const IMPORT = /(?:import|export)\s+(?:[^'"]*?\sfrom\s+)?'([^']+)'/g;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

const breaches: string[] = [];
const edges = new Map<string, Set<string>>();
for (const file of files(SRC)) {
  const from = relative(SRC, file);
  for (const [, spec] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    if (!spec.startsWith('.')) continue;
    const to = relative(SRC, join(file, '..', spec));
    if (from.startsWith('platform/') && !to.startsWith('platform/') && to !== 'config.js') {
      breaches.push(`${from} imports ${to}: the platform imports no feature and no wiring`);
    }
    const a = from.match(/^features\/([^/]+)\//)?.[1];
    const b = to.match(/^features\/([^/]+)\//)?.[1];
    if (a && b && a !== b) {
      if (!edges.has(a)) edges.set(a, new Set());
      edges.get(a)?.add(b);
    }
  }
}

// Depth-first search for a cycle among feature folders.
const state = new Map<string, 'open' | 'done'>();
function visit(node: string, path: string[]): void {
  if (state.get(node) === 'done') return;
  if (state.get(node) === 'open') {
    breaches.push(`feature cycle: ${[...path.slice(path.indexOf(node)), node].join(' -> ')}`);
    return;
  }
  state.set(node, 'open');
  for (const next of edges.get(node) ?? []) visit(next, [...path, node]);
  state.set(node, 'done');
}
for (const node of edges.keys()) visit(node, []);

if (breaches.length > 0) {
  for (const b of breaches) console.error(b);
  process.exit(1);
}
console.log(`layers: platform below features, ${edges.size} feature folders without a cycle`);
