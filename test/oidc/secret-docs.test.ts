import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/*
 * A client secret travels form-encoded (RFC 6749 §2.3.1): an RP that sends a "+" unencoded has it
 * read as a space and gets invalid_client. The documents that tell operators how to make a client
 * secret must recommend an alphabet form encoding leaves alone (docs/oidc.md, "Clients").
 */
const DOCUMENTS = ['docs/oidc.md', 'docs/admin.md', 'README.md', 'examples/oidc-rp/README.md'];

describe('client secrets in the documents', () => {
  it('no document recommends a plain base64 client secret', () => {
    for (const path of DOCUMENTS) {
      const text = readFileSync(path, 'utf8');
      expect(text, path).not.toMatch(/openssl rand -base64/);
      expect(text, path).not.toMatch(/toString\(['"]base64['"]\)/);
    }
  });

  it('docs/oidc.md recommends hex or base64url and says why', () => {
    const text = readFileSync('docs/oidc.md', 'utf8');
    expect(text).toContain('openssl rand -hex 32');
    expect(text).toContain("toString('base64url')");
    expect(text).toContain('RFC 6749 §2.3.1');
  });
});
