import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/*
 * A deployment's synchronous hook receiver (docs/events.md, "Synchronous hooks") on loopback: it
 * verifies every call with the published `standardwebhooks` library and answers as the test says.
 */

export interface Call {
  type: string;
  data: Record<string, unknown>;
  body: string;
}

/** What the receiver does with one call: answer JSON, or never answer. */
export type Reply = { json: unknown; status?: number } | { raw: string } | 'hang';

export interface Receiver {
  url: string;
  calls: Call[];
  reply: (call: Call) => Reply;
  close(): Promise<void>;
}

export async function startReceiver(secret: string): Promise<Receiver> {
  const verifier = new Webhook(secret);
  const r = { calls: [] as Call[], reply: (): Reply => ({ json: { allow: true } }) } as unknown as Receiver;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let payload: { type: string; data: Record<string, unknown> };
      try {
        // The published library, unchanged: signature, id and timestamp freshness.
        payload = verifier.verify(body, req.headers as Record<string, string>) as typeof payload;
      } catch {
        res.writeHead(401).end();
        return;
      }
      const call = { type: payload.type, data: payload.data, body };
      r.calls.push(call);
      const reply = r.reply(call);
      if (reply === 'hang') return;
      res.writeHead('raw' in reply ? 200 : (reply.status ?? 200), { 'content-type': 'application/json' });
      res.end('raw' in reply ? reply.raw : JSON.stringify(reply.json));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  r.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return r;
}

/** The hook settings pointing all three hooks at one receiver, with a short timeout. */
export function hookEnv(
  secret: string,
  url: string,
  extra: Record<string, string> = {},
  timeoutMs = '300',
): Record<string, string> {
  return {
    HOOK_BEFORE_IDENTITY_CREATED_URL: url,
    HOOK_BEFORE_SIGN_IN_URL: url,
    HOOK_CUSTOM_CLAIMS_URL: url,
    HOOKS_SECRET: secret,
    HOOK_TIMEOUT_MS: timeoutMs,
    ...extra,
  };
}
