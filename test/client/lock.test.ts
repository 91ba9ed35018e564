import { randomInt } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { broadcastRenewal, type ChannelLike, type RenewalLock } from '../../packages/client/src/lock.js';

/**
 * The BroadcastChannel fallback's mutual exclusion (packages/client/src/lock.ts) over real
 * BroadcastChannels (Node's reach every channel of the same name in the process), each message
 * held back a random 0–150 ms after the one before, as a loaded machine holds back a renderer's
 * messages, order kept per sender as the channel keeps it. The claim-and-wait-40-ms protocol it replaced let two pages hold
 * the lock at once under such delays (a refresh-token replay in the two-tab browser test on a loaded
 * machine); Ricart and Agrawala's does not depend on how fast messages travel.
 */

const locks: RenewalLock[] = [];
afterEach(() => {
  for (const lock of locks.splice(0)) lock.close();
});

function slowChannel(maxDelayMs: number) {
  return (name: string): ChannelLike => {
    const real = new BroadcastChannel(name);
    // One chain per sender: each message waits its own delay after the one before it went out, so
    // the order holds (two timers due in the same millisecond may fire in either order).
    let chain = Promise.resolve();
    let closed = false;
    const slow: ChannelLike = {
      postMessage(message) {
        const delay = randomInt(maxDelayMs + 1);
        chain = chain.then(async () => {
          await sleep(delay);
          if (!closed) real.postMessage(message);
        });
      },
      onmessage: null,
      // What was posted before the close still goes out, as a real channel's queued messages do.
      close: () => {
        chain = chain.then(() => {
          closed = true;
          real.close();
        });
      },
    };
    real.onmessage = (event) => slow.onmessage?.({ data: (event as MessageEvent).data });
    return slow;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the BroadcastChannel renewal lock', () => {
  it('never lets two pages hold it at once, however slowly messages travel', async () => {
    const name = `lock-test-${randomInt(1e9)}`;
    const pages = [0, 1, 2].map(() => broadcastRenewal(name, slowChannel(150)));
    locks.push(...pages);
    await sleep(400); // the pages find each other (hello, here) through the slow channel
    let holders = 0;
    let most = 0;
    let runs = 0;
    await Promise.all(
      pages.map(async (page) => {
        for (let i = 0; i < 8; i++) {
          await page.exclusive(async () => {
            holders++;
            most = Math.max(most, holders);
            await sleep(randomInt(15));
            holders--;
            runs++;
          });
          await sleep(randomInt(30));
        }
      }),
    );
    expect(runs).toBe(24);
    expect(most).toBe(1);
  }, 60_000);

  it('stops waiting for a page that said goodbye, and a spent token reaches the next holder first', async () => {
    const name = `lock-test-${randomInt(1e9)}`;
    const [a, b] = [broadcastRenewal(name, slowChannel(60)), broadcastRenewal(name, slowChannel(60))];
    locks.push(a, b);
    await sleep(200);
    let seen = false;
    // a holds the lock, spends a token and closes; b, asking while a holds, enters after and sees it
    // spent. (b asks once a is in: asked at once, b's request could carry the earlier timestamp and
    // rightly go first.)
    let inside!: () => void;
    const aIsIn = new Promise<void>((resolve) => {
      inside = resolve;
    });
    const holding = a.exclusive(async () => {
      inside();
      await sleep(100);
      await a.markSpent('refresh-token-1');
    });
    await aIsIn;
    const waiting = b.exclusive(async () => {
      seen = await b.isSpent('refresh-token-1');
    });
    await holding;
    await waiting;
    expect(seen).toBe(true);
    a.close();
    locks.splice(locks.indexOf(a), 1);
    // With a gone, b enters alone at once rather than after the silence time-out.
    const started = Date.now();
    await b.exclusive(async () => {});
    expect(Date.now() - started).toBeLessThan(2_000);
  }, 30_000);
});
