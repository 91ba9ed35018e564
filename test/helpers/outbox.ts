import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One message of the development outbox (`<DATA_DIR>/outbox.jsonl`). */
export interface OutboxLine {
  to: string;
  type: string;
  subject: string;
  text: string;
}

/** Every message the development outbox holds, oldest first. */
export function outbox(dataDir: string): OutboxLine[] {
  const path = join(dataDir, 'outbox.jsonl');
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as OutboxLine);
}

/**
 * The code of a message: its own whitespace-separated token, issued upper-case or as digits, of
 * `length` characters (or any configurable length, 6..12, when not given).
 */
export function codeIn(text: string, length?: number): string {
  const pattern = new RegExp(`^[A-Z0-9]{${length ?? '6,12'}}$`);
  const tokens = text.split(/\s+/).filter((t) => pattern.test(t));
  if (tokens.length !== 1) throw new Error(`expected exactly one code token, found ${tokens.length}`);
  return tokens[0];
}

/** The code of the newest outbox message sent to `to`. */
export function lastCode(dataDir: string, to: string, length?: number): string {
  const mine = outbox(dataDir).filter((m) => m.to === to);
  if (mine.length === 0) throw new Error(`no message for ${to}`);
  return codeIn(mine[mine.length - 1].text, length);
}

/** Every outbox message sent to `to`, oldest first. */
export function messagesTo(dataDir: string, to: string): OutboxLine[] {
  return outbox(dataDir).filter((m) => m.to === to);
}

/**
 * Waits for the `count`-th message to `to` (recovery messages leave just after the answer) and
 * returns its code.
 */
export async function waitForCode(
  dataDir: string,
  to: string,
  count: number,
  timeoutMs = 3000,
): Promise<string> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const mine = messagesTo(dataDir, to);
    if (mine.length >= count) return codeIn(mine[count - 1].text);
    if (Date.now() > until) throw new Error(`no message #${count} for ${to}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
