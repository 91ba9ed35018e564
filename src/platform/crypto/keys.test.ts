import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deriveKey, type KeyPurpose, loadOrCreateDevKey } from './keys.js';

describe('deriveKey', () => {
  // Known answers: every sealed value, audit seal and code hash already stored was made with these
  // bytes, so a change here would make existing data unreadable.
  const ROOT = Buffer.alloc(32, 7);
  const KNOWN: Record<KeyPurpose, string> = {
    sealing: '737f6e19f3848da8f30c267892080e9526293d051adf199b90aeba788097675a',
    'audit-seal': '726139d8e28ede58c36cd400ba95f967c8ea974134d898b004791291c9ac85ce',
    'out-of-band-codes': 'bce53d71c3771bb27413c9c5f4fa9fcda77efae33f7f0740278545531d095ce7',
    'cursor-signing-key': '15e75b5e5ba5ae4252c4a38771ede01810cf9eefcc379d7dd98c50df0b52b589',
    'guess-budgets': '690b41457b74d861a8dc77e98682d025020d8c4ce570e2ac14426c3fea23f9e7',
    'key-check': 'd0437e7c359771f758695aced6105f844e95febeb2536ee62543df7ecdb1e2c8',
    'oidc-cookies': '3a050e05c654d1e9dc34b808ab6f3508a1a2f8d92cc67eb272c6f0cc3d881270',
    'oidc-dpop-nonces': 'ae4cbaa835220125c9a8f93634c71172eeafec57ce335971753d959823d42a4a',
    'organization-invitations': 'b7dbdd5d04dc59306b7326e81dbf996ad6e7294b7933f944405882835e0a71e2',
    'sign-in-links': 'e1d12737e3c173a7b325fc0990ef1ea5ebeae6500a391821be22a549db23295a',
  };

  it.each(Object.entries(KNOWN))('derives the %s key as before', (purpose, hex) => {
    expect(deriveKey(ROOT, purpose as KeyPurpose).toString('hex')).toBe(hex);
  });

  it('gives each purpose its own key, none equal to the root', () => {
    const keys = Object.keys(KNOWN).map((p) => deriveKey(ROOT, p as KeyPurpose).toString('hex'));
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).not.toContain(ROOT.toString('hex'));
  });
});

describe('loadOrCreateDevKey', () => {
  it('writes 32 random bytes once, owner-only, and reads them back', () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'idsvc-keys-')), 'nested');
    const first = loadOrCreateDevKey(dir);
    expect(first).toHaveLength(32);
    expect(statSync(join(dir, 'secrets.key')).mode & 0o777).toBe(0o600);
    expect(loadOrCreateDevKey(dir).equals(first)).toBe(true);
  });

  it('replaces a file that does not hold 32 bytes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'idsvc-keys-'));
    writeFileSync(join(dir, 'secrets.key'), 'c2hvcnQ=');
    const key = loadOrCreateDevKey(dir);
    expect(key).toHaveLength(32);
    expect(readFileSync(join(dir, 'secrets.key'), 'utf8')).toBe(key.toString('base64'));
  });
});
