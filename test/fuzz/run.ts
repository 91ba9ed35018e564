import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type Focus, requestFor } from './arbitraries.js';
import { FUZZ_RUNS, FUZZ_TIMEOUT_MS, FuzzApp, fuzzParameters } from './support.js';

/**
 * One fuzz suite: every route of the OpenAPI document (read at test time, so a new route is fuzzed
 * without touching this file) gets FUZZ_RUNS requests with `focus` deciding which dimensions are
 * adversarial. Each request is checked by FuzzApp.exchange; afterwards the log must hold no secret.
 */
export async function fuzzEveryRoute(title: string, focus: Focus): Promise<void> {
  const fz = await FuzzApp.open();
  afterAll(async () => {
    console.info(`[fuzz] ${title}: ${fz.summary()}`);
    await fz.close();
  });

  describe(`${title} (${FUZZ_RUNS} runs per route)`, () => {
    it('the OpenAPI document lists the business routes', () => {
      expect(fz.routes.length).toBeGreaterThan(20);
    });

    for (const route of fz.routes) {
      it(
        `${route.method} ${route.path}`,
        async () => {
          await fc.assert(
            fc.asyncProperty(requestFor(route, focus), async (spec) => {
              await fz.exchange(spec);
            }),
            fuzzParameters(),
          );
        },
        FUZZ_TIMEOUT_MS,
      );
    }

    it('no secret sent in a body or credential reached the log', () => {
      expect(fz.logLeaks()).toEqual([]);
    });
  });
}
