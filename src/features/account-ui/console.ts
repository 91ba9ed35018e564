import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { FastifyPluginAsync } from 'fastify';
import { type Asset, asset, UI_DIR } from './bundle.js';
import { CONTENT_SECURITY_POLICY, securityHeaders, send } from './routes.js';

/** Where the console's pages live on the admin listener (its sign-in routes sit beside them). */
const BASE = '/console/';

interface ConsoleBundle {
  index: Asset;
  assets: Asset[];
}

/**
 * The operators' console (ui/console/), bundled once per process in memory as the account pages
 * are (features/account-ui/bundle.ts): the script (ui/ and the console's own modules) and the style
 * sheet get content-hashed names written into the page.
 */
export function bundleConsole(): Promise<ConsoleBundle> {
  built ??= bundleOnce();
  return built;
}
let built: Promise<ConsoleBundle> | undefined;

async function bundleOnce(): Promise<ConsoleBundle> {
  const dir = join(UI_DIR, 'console');
  const result = await build({
    entryPoints: { console: join(dir, 'main.ts'), console_css: join(dir, 'styles.css') },
    bundle: true,
    write: false,
    outdir: 'out',
    format: 'esm',
    platform: 'browser',
    target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const out = (suffix: string) => {
    const file = result.outputFiles.find((f) => f.path.endsWith(suffix));
    if (!file) throw new Error(`console: esbuild produced no ${suffix}`);
    return Buffer.from(file.contents);
  };
  const script = asset('console', 'js', 'text/javascript; charset=utf-8', out('/console.js'));
  const style = asset('console', 'css', 'text/css; charset=utf-8', out('/console_css.css'));
  const icon = asset('favicon', 'svg', 'image/svg+xml', await readFile(join(UI_DIR, 'favicon.svg')), false);
  const html = (await readFile(join(dir, 'index.html'), 'utf8'))
    .replace('console.js', script.name)
    .replace('console.css', style.name);
  const index = asset('index', 'html', 'text/html; charset=utf-8', Buffer.from(html), false);
  return { index, assets: [script, style, icon] };
}

/**
 * The console's pages on the admin listener only (docs/admin.md, "The console"): one page at
 * /console/, its hashed script and style sheet and an icon, under the account pages' strict CSP
 * (its own script and styles, requests to its own origin, never framed). The page signs in through
 * /console/sign-in and calls /admin/v1 with the token POST /console/session hands it.
 */
export const consolePageRoutes: FastifyPluginAsync = async (app) => {
  const bundle = await bundleConsole();
  const headers = securityHeaders(CONTENT_SECURITY_POLICY);
  const hide = { schema: { hide: true } };
  app.get('/console', hide, async (_request, reply) => reply.headers(headers).redirect(BASE, 301));
  app.get(BASE, hide, async (request, reply) => send(request, reply, bundle.index, 'no-cache', headers));
  for (const a of bundle.assets) {
    const cache = a.name.startsWith('favicon')
      ? 'public, max-age=86400'
      : 'public, max-age=31536000, immutable';
    app.get(`${BASE}${a.name}`, hide, async (request, reply) => send(request, reply, a, cache, headers));
  }
};
