import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type ChannelOutcome,
  DELIVERED,
  type FailureInfo,
  notDelivered,
  type OutboundMessage,
  safeToken,
} from './types.js';

export const OUTBOX_FILE = 'outbox.jsonl';

export function outboxPath(dataDir: string): string {
  return join(dataDir, OUTBOX_FILE);
}

/**
 * Development only: appends the message as one JSON line to `<dataDir>/outbox.jsonl`.
 * The caller guarantees this is never reached in production.
 */
export async function appendToOutbox(dataDir: string, message: OutboundMessage): Promise<ChannelOutcome> {
  const line = `${JSON.stringify({
    at: new Date().toISOString(),
    to: message.to,
    type: message.type,
    subject: message.subject,
    text: message.text,
  })}\n`;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    await mkdir(dataDir, { recursive: true });
    handle = await open(outboxPath(dataDir), 'a', 0o600);
  } catch (err) {
    // nothing was written
    return notDelivered(true, fsFailure(err));
  }
  try {
    await handle.write(line);
    return DELIVERED;
  } catch (err) {
    // part of the line may be in the file
    return notDelivered(false, fsFailure(err));
  } finally {
    await handle.close().catch(() => {});
  }
}

function fsFailure(err: unknown): FailureInfo {
  const e = err as { name?: unknown; code?: unknown } | null;
  const failure: FailureInfo = { channel: 'outbox', errorClass: safeToken(e?.name) ?? 'Error' };
  const code = safeToken(e?.code);
  if (code) failure.code = code;
  return failure;
}
