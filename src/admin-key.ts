// npm run admin:key -- NAME: prints a new operator key and its ADMIN_API_KEYS entry. The key is
// shown once and kept nowhere; the service stores only its SHA-256 (the entry).
import { createHash, randomBytes } from 'node:crypto';
import { ADMIN_KEY_NAME } from './config.js';
import { fail } from './entry.js';

const name = process.argv[2];
if (process.argv.length !== 3 || name === undefined || !ADMIN_KEY_NAME.test(name)) {
  fail('usage: npm run admin:key -- NAME (a-z 0-9 . _ -, starting with a letter or digit, up to 63)', 2);
}
// 32 random bytes; the prefix tells an operator key apart in a secret scanner or a shell history.
const key = `adm_${randomBytes(32).toString('base64url')}`;
const entry = `${name}:${createHash('sha256').update(key).digest('hex')}`;
process.stdout.write(
  `key:   ${key}\nentry: ${entry}\n\nGive the key to the operator (it is shown once); append the entry to ADMIN_API_KEYS\n` +
    `(comma-separated) and restart. Remove the entry to revoke the key.\n`,
);
