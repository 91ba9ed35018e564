import { fuzzEveryRoute } from './run.js';

// Adversarial bodies and content types; credentials and target mostly valid (a real session and
// elevation in most cases), so the body reaches validation and often the handler.
await fuzzEveryRoute('fuzzed bodies', { body: 'any', credentials: 'plausible', target: 'plausible' });
