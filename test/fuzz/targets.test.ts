import { fuzzEveryRoute } from './run.js';

// Methods, paths ({id} replaced by arbitrary strings, dot segments, %00, unicode, overlong) and
// query strings (unknown parameters, limit=-1, limit=abc, very long cursors).
await fuzzEveryRoute('fuzzed methods, paths and queries', {
  body: 'plausible',
  credentials: 'plausible',
  target: 'any',
});
