import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { GENERATION_ENV, renderTypes, TYPES_FILE } from '../../packages/client/scripts/generate-types.js';
import { createTestApp } from '../helpers/app.js';

/**
 * The client's types cannot drift from the service: they are regenerated here from the running
 * service's document, under the configuration `npm run client:types` uses, and must equal the
 * committed file byte for byte.
 */
it(
  'packages/client/src/generated/openapi.ts equals the types of the served /openapi.json',
  { timeout: 90_000 },
  async () => {
    const t = await createTestApp({ env: GENERATION_ENV });
    try {
      const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
      expect(res.statusCode).toBe(200);
      const generated = await renderTypes(res.json());
      expect(generated).toContain('"/api/v1/sign-ins/renewals"');
      const committed = readFileSync(TYPES_FILE, 'utf8');
      expect(
        generated === committed,
        'the client types are stale: run npm run client:types and commit the file',
      ).toBe(true);
    } finally {
      await t.close();
    }
  },
);
