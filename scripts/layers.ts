// The import rules dpdm cannot see (it checks files; these are about folders), run by npm run lint:
//   - src/platform imports nothing of the service outside src/platform but src/shared/ (no config, no
//     feature, no wiring); the option types it needs are its own, which the configuration satisfies;
//   - src/config (the schema kit, the loader and the sections of the service as a whole) imports
//     nothing outside src/config but the platform's leaf src/platform/config-error.ts, the error both
//     throw; it knows no feature;
//   - a feature's section (src/features/<name>/config.ts) imports only the kit of src/config (never
//     the loader nor the facade, which import it) and the platform, and only the facade src/config.ts
//     and its own feature import it;
//   - src/config/load.ts is imported only by the facade src/config.ts, the composition root: the one
//     module that meets src/config, the features' sections and the platform's key derivation;
//   - the feature folders import each other without a cycle (sessions -> second-factors ->
//     sessions would be one, even when no single file closes the loop);
//   - src/shared/ is what the service and the hosted page (ui/) both run: it imports nothing
//     outside itself and nothing from Node, since the page bundles it for the browser;
//   - ui/ imports nothing of the service but src/shared/, and a package only by its source
//     (packages/<name>/src/);
//   - a package's source (packages/<name>/src/) imports nothing outside itself: it is published as
//     it is.
// Static, side-effect and dynamic imports (`import('...')`, in type positions too) all count.
// See docs/decisions.md, "The configuration in sections". Exits 1 with one line per breach.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = new URL('../', import.meta.url).pathname;
const SRC = join(ROOT, 'src');
const IMPORT = /(?:import|export)\s+(?:[^'"]*?\sfrom\s+)?'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/g;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules') return [];
    if (statSync(path).isDirectory()) return files(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const breaches: string[] = [];
const edges = new Map<string, Set<string>>();
for (const file of files(SRC)) {
  const from = relative(SRC, file);
  for (const [, st, dyn] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const spec = st ?? dyn;
    if (from.startsWith('shared/') && spec.startsWith('node:')) {
      breaches.push(
        `${from} imports ${spec}: src/shared/ runs in the browser too, so it imports nothing from Node`,
      );
    }
    if (!spec.startsWith('.')) continue;
    const to = relative(SRC, join(file, '..', spec));
    if (from.startsWith('shared/') && !to.startsWith('shared/')) {
      breaches.push(`${from} imports ${to}: src/shared/ imports nothing outside itself`);
    }
    if (from.startsWith('platform/') && !to.startsWith('platform/') && !to.startsWith('shared/')) {
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

/** Each relative import of every file under `dir`, both ends from the root. */
function relativeImports(dir: string): { from: string; to: string }[] {
  return files(join(ROOT, dir)).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(IMPORT)]
      .map(([, a, b]) => a ?? b)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => ({ from: relative(ROOT, file), to: relative(ROOT, join(file, '..', spec)) })),
  );
}

for (const { from, to } of relativeImports('ui')) {
  if (to.startsWith('ui/') || to.startsWith('src/shared/') || /^packages\/[^/]+\/src\//.test(to)) continue;
  breaches.push(
    `${from} imports ${to}: ui/ imports nothing outside it but src/shared/ and packages/<name>/src/`,
  );
}

for (const name of readdirSync(join(ROOT, 'packages'))) {
  const own = `packages/${name}/src/`;
  if (!statSync(join(ROOT, own), { throwIfNoEntry: false })?.isDirectory()) continue;
  for (const { from, to } of relativeImports(own)) {
    if (!to.startsWith(own))
      breaches.push(`${from} imports ${to}: a package's source imports nothing outside ${own}`);
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
  `layers: platform and config apart, below features; ${edges.size} feature folders without a cycle; ui/ and packages/ within bounds`,
);
