import { fuzzEveryRoute } from './run.js';

// Forged and garbage bearer tokens (alg none, HS256 keyed with the public JWK, RS256, foreign keys,
// 64 KiB payloads), elevation tokens and stray headers; bodies plausible.
await fuzzEveryRoute('fuzzed credentials and headers', {
  body: 'plausible',
  credentials: 'any',
  target: 'plausible',
});
