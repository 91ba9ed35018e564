// The import rules dpdm cannot see (it checks files; these are about folders), run by npm run lint:
//   - src/platform imports nothing of the service outside src/platform (no config, no feature, no
//     wiring); the option types it needs are its own, which the configuration satisfies;
//   - src/config (the schema kit, the loader and the sections of the service as a whole) imports
//     nothing outside src/config but the platform's leaf src/platform/config-error.ts, the error both
//     throw; it knows no feature;
//   - a feature's section (src/features/<name>/config.ts) imports only the kit of src/config (never
//     the loader nor the facade, which import it) and the platform, and only the facade src/config.ts
//     and its own feature import it;
//   - src/config/load.ts is imported only by the facade src/config.ts, the composition root: the one
//     module that meets src/config, the features' sections and the platform's key derivation;
//   - the feature folders import each other without a cycle (sessions -> second-factors ->
//     sessions would be one, even when no single file closes the loop).
// See docs/decisions.md, "The configuration in sections". Exits 1 with one line per breach.
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
    if (from.startsWith('platform/') && !to.startsWith('platform/')) {
      breaches.push(`${from} imports ${to}: the platform imports no config, no feature and no wiring`);
    }
    if (from.startsWith('config/') && !to.startsWith('config/') && to !== 'platform/config-error.js') {
      breaches.push(
        `${from} imports ${to}: src/config imports only src/config and the platform's config-error`,
      );
    }
    const section = /^features\/([^/]+)\/config\.(ts|js)$/;
    if (
      section.test(from) &&
      !(to.startsWith('config/') && to !== 'config/load.js') &&
      !to.startsWith('platform/')
    ) {
      breaches.push(
        `${from} imports ${to}: a feature's section imports only the kit of src/config and the platform`,
      );
    }
    const owner = to.match(section)?.[1];
    if (owner && from !== 'config.ts' && !from.startsWith(`features/${owner}/`)) {
      breaches.push(
        `${from} imports ${to}: a feature's section is imported by the facade and its own feature only`,
      );
    }
    if (to === 'config/load.js' && from !== 'config.ts') {
      breaches.push(`${from} imports ${to}: only the facade src/config.ts composes the sections`);
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
console.log(
  `layers: platform and config apart, below features; ${edges.size} feature folders without a cycle`,
);
