/**
 * A minimal webhook receiver for the identity service's events (docs/events.md): node:http and
 * the published `standardwebhooks` package only. It verifies every delivery, `v1` with the
 * endpoint's `whsec_` secret and, when PUBLIC_KEY is set, `v1a` with its Ed25519 public key,
 * drops repeats by `webhook-id` and prints each event as one line.
 *
 *   WEBHOOK_SECRET=whsec_… [PUBLIC_KEY=whpk_…] PORT=4100 npx tsx examples/webhook-receiver/server.ts
 */
import { createPublicKey, verify } from 'node:crypto';
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const SECRET = process.env.WEBHOOK_SECRET;
if (!SECRET) {
  process.stderr.write('WEBHOOK_SECRET is required (see examples/webhook-receiver/README.md)\n');
  process.exit(1);
}
const PORT = Number(process.env.PORT ?? 4100);
const webhook = new Webhook(SECRET);
const publicKey = process.env.PUBLIC_KEY
  ? createPublicKey({
      key: {
        kty: 'OKP',
        crv: 'Ed25519',
        x: Buffer.from(process.env.PUBLIC_KEY.slice('whpk_'.length), 'base64').toString('base64url'),
      },
      format: 'jwk',
    })
  : null;
/** Delivery is at least once: the ids seen (a real app keeps them in its database). */
const seen = new Set<string>();

/** Every `v1a` signature of the header verifies with the public key (and there is one). */
function v1aVerifies(headers: Record<string, string>, body: string): boolean {
  if (!publicKey) return true;
  const content = Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`);
  const signatures = (headers['webhook-signature'] ?? '').split(' ').filter((s) => s.startsWith('v1a,'));
  return (
    signatures.length > 0 &&
    signatures.every((s) => verify(null, content, publicKey, Buffer.from(s.slice(4), 'base64')))
  );
}

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = req.headers as Record<string, string>;
    let event: { id: string; type: string; timestamp: string; data: unknown };
    try {
      event = webhook.verify(body, headers) as typeof event;
      if (!v1aVerifies(headers, body)) throw new Error('v1a');
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (!seen.has(event.id)) {
      seen.add(event.id);
      process.stdout.write(`${event.timestamp} ${event.type} ${JSON.stringify(event.data)}\n`);
    }
    res.writeHead(204).end();
  });
}).listen(PORT, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${PORT}/\n`));
