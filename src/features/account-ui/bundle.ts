import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The UI's own source, beside src/ at the root of the service. */
export const UI_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../ui');

export interface Asset {
  /** The name it is served under, with its content hash (cached for good). */
  name: string;
  type: string;
  body: Buffer;
  etag: string;
}

export interface Bundle {
  index: Asset;
  assets: Asset[];
}

const hashOf = (body: Buffer) => createHash('sha256').update(body).digest('base64url').slice(0, 16);

export function asset(base: string, ext: string, type: string, body: Buffer, hashed = true): Asset {
  const hash = hashOf(body);
  return { name: hashed ? `${base}.${hash}.${ext}` : `${base}.${ext}`, type, body, etag: `"${hash}"` };
}

/**
 * Bundles ui/ once, in memory, when the plugin registers: `npm start` needs no build step and
 * nothing is written to disk. The script (the typed client from packages/client included) and the
 * style sheet get content-hashed names, written into the page, so the page is the one answer a
 * browser must revalidate.
 */
export function bundleUi(): Promise<Bundle> {
  // Once per process: every app built in it (the test suites build hundreds) shares the bundle.
  built ??= bundleOnce();
  return built;
}
let built: Promise<Bundle> | undefined;

async function bundleOnce(): Promise<Bundle> {
  const result = await build({
    entryPoints: { app: join(UI_DIR, 'main.ts'), app_css: join(UI_DIR, 'styles.css') },
    bundle: true,
    write: false,
    outdir: 'out',
    format: 'esm',
    // A dynamic import() becomes its own file, fetched when it runs: the strength meter's rule
    // (zxcvbn and its dictionaries, most of the weight) loads on the first new-password keystroke.
    splitting: true,
    chunkNames: '[name].[hash]',
    platform: 'browser',
    target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
    // qrcode's browser build reaches for no Node module; anything else that does is a mistake.
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const out = (suffix: string) => {
    const file = result.outputFiles.find((f) => f.path.endsWith(suffix));
    if (!file) throw new Error(`account UI: esbuild produced no ${suffix}`);
    return Buffer.from(file.contents);
  };
  const script = asset('app', 'js', 'text/javascript; charset=utf-8', out('/app.js'));
  const style = asset('app', 'css', 'text/css; charset=utf-8', out('/app_css.css'));
  const icon = asset('favicon', 'svg', 'image/svg+xml', await readFile(join(UI_DIR, 'favicon.svg')), false);
  const html = (await readFile(join(UI_DIR, 'index.html'), 'utf8'))
    .replace('app.js', script.name)
    .replace('app.css', style.name);
  const index = asset('index', 'html', 'text/html; charset=utf-8', Buffer.from(html), false);
  // The chunks keep esbuild's names (with their content hash): the script imports them by those.
  const chunks = result.outputFiles
    .filter((f) => f.path.endsWith('.js') && !f.path.endsWith('/app.js'))
    .map((f) => {
      const base = f.path.slice(f.path.lastIndexOf('/') + 1, -'.js'.length);
      return asset(base, 'js', 'text/javascript; charset=utf-8', Buffer.from(f.contents), false);
    });
  return { index, assets: [script, style, icon, ...chunks] };
}
